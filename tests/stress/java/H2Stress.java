// H2 (Debian's libh2-java): builds a database on disk with SQL — inserts, an index, joins, aggregates, updates,
// deletes — and prints every query's result, so the output is the same on every run.
//
// usage: java -cp h2.jar:. H2Stress DATABASE_PATH ROWS
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;

public final class H2Stress {
    static void print(Statement statement, String sql) throws Exception {
        System.out.println("> " + sql);
        try (ResultSet rows = statement.executeQuery(sql)) {
            ResultSetMetaData meta = rows.getMetaData();
            while (rows.next()) {
                StringBuilder line = new StringBuilder();
                for (int c = 1; c <= meta.getColumnCount(); c++) {
                    if (c > 1) line.append('|');
                    line.append(rows.getString(c));
                }
                System.out.println(line);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        final String path = args[0];
        final int rows = Integer.parseInt(args[1]);
        try (Connection connection = DriverManager.getConnection("jdbc:h2:" + path, "sa", "")) {
            Statement statement = connection.createStatement();
            statement.execute("CREATE TABLE customer(id INT PRIMARY KEY, region INT, name VARCHAR(64))");
            statement.execute("CREATE TABLE orders(id INT PRIMARY KEY, customer INT, amount DECIMAL(12,2), "
                    + "note VARCHAR(4000))");
            connection.setAutoCommit(false);
            try (PreparedStatement insert = connection.prepareStatement("INSERT INTO customer VALUES(?, ?, ?)")) {
                for (int i = 0; i < rows / 10; i++) {
                    insert.setInt(1, i);
                    insert.setInt(2, i % 17);
                    insert.setString(3, "customer-" + Integer.toString(i * 7919 % 100003, 36));
                    insert.addBatch();
                }
                insert.executeBatch();
            }
            StringBuilder note = new StringBuilder();
            try (PreparedStatement insert = connection.prepareStatement("INSERT INTO orders VALUES(?, ?, ?, ?)")) {
                for (int i = 0; i < rows; i++) {
                    note.setLength(0);
                    // Notes of 0.2-1.8 KB, many alike: large strings for the JVM to allocate and copy.
                    int repeat = 20 + (i * 31) % 160;
                    for (int r = 0; r < repeat; r++) note.append((char) ('a' + (i + r) % 26)).append("note ");
                    insert.setInt(1, i);
                    insert.setInt(2, (int) ((i * 2654435761L) % (rows / 10)));
                    insert.setBigDecimal(3, java.math.BigDecimal.valueOf((i * 37L) % 100000, 2));
                    insert.setString(4, note.substring(0, Math.min(note.length(), 1900)));
                    insert.addBatch();
                    if (i % 1000 == 999) insert.executeBatch();
                }
                insert.executeBatch();
            }
            connection.commit();
            statement.execute("CREATE INDEX orders_customer ON orders(customer)");
            print(statement, "SELECT COUNT(*), SUM(amount), MAX(LENGTH(note)) FROM orders");
            print(statement, "SELECT c.region, COUNT(*), SUM(o.amount) FROM orders o JOIN customer c "
                    + "ON o.customer = c.id GROUP BY c.region ORDER BY c.region");
            print(statement, "SELECT c.name, COUNT(*) AS n FROM orders o JOIN customer c ON o.customer = c.id "
                    + "GROUP BY c.name ORDER BY n DESC, c.name LIMIT 10");
            print(statement, "SELECT id, LEFT(note, 24) FROM orders WHERE note LIKE 'k%' ORDER BY id LIMIT 5");
            statement.executeUpdate("UPDATE orders SET amount = amount * 2, note = CONCAT(note, note) "
                    + "WHERE MOD(id, 7) = 0");
            statement.executeUpdate("DELETE FROM orders WHERE MOD(id, 11) = 0");
            connection.commit();
            print(statement, "SELECT COUNT(*), SUM(amount), SUM(LENGTH(note)) FROM orders");
            print(statement, "SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer "
                    + "HAVING COUNT(*) >= 10 ORDER BY total DESC, customer LIMIT 10");
            print(statement, "SELECT region, name FROM customer WHERE id IN (SELECT customer FROM orders "
                    + "WHERE amount > 990) ORDER BY region, name LIMIT 10");
        }
    }
}
