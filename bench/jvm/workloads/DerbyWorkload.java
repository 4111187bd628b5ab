// Apache Derby workload of the real-program corpus (bench/corpus/corpus.py).
//
// A fixed amount of work on an embedded in-memory Derby database (Debian package libderby-java): a customer and
// an order table with a secondary index, filled in batches from a seeded generator and committed, then ROUNDS
// rounds of a grouped join, 2 000 point aggregates by customer through the index and an update of a seventh of
// the orders. Prints one line "checksum <hex>" over every query result. Not time-bounded: the work is set by the
// arguments.
//
// usage: java -cp <classes>:/usr/share/java/derby.jar DerbyWorkload [ORDERS [ROUNDS]]
//   ORDERS: orders to insert (default 50000, plus ORDERS/10 customers); ROUNDS: rounds of the query mix (default 3)

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;

public final class DerbyWorkload {
    private static final int BATCH = 500;
    private static final int LOOKUPS = 2000;

    public static void main(String[] args) throws Exception {
        int orders = args.length > 0 ? Integer.parseInt(args[0]) : 50000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int customers = orders / 10;
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        long rows = 0;
        try (Connection connection = DriverManager.getConnection("jdbc:derby:memory:corpus;create=true")) {
            connection.setAutoCommit(false);
            Statement statement = connection.createStatement();
            statement.execute("CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(40), city VARCHAR(20))");
            statement.execute("CREATE TABLE orders (id INT PRIMARY KEY, customer INT, amount DECIMAL(10,2), "
                    + "note VARCHAR(100))");
            statement.execute("CREATE INDEX orders_customer ON orders(customer)");
            try (PreparedStatement insert = connection.prepareStatement("INSERT INTO customer VALUES (?, ?, ?)")) {
                for (int id = 0; id < customers; id++) {
                    insert.setInt(1, id);
                    insert.setString(2, "customer " + id);
                    insert.setString(3, "city" + (id % 37));
                    insert.addBatch();
                    if (id % BATCH == BATCH - 1) insert.executeBatch();
                }
                insert.executeBatch();
            }
            long state = 42;  // 64-bit LCG: every run inserts the same data
            try (PreparedStatement insert = connection.prepareStatement("INSERT INTO orders VALUES (?, ?, ?, ?)")) {
                for (int id = 0; id < orders; id++) {
                    state = state * 6364136223846793005L + 1442695040888963407L;
                    insert.setInt(1, id);
                    insert.setInt(2, (int) ((state >>> 33) % customers));
                    insert.setBigDecimal(3, BigDecimal.valueOf((state >>> 20) % 100000, 2));
                    insert.setString(4, "note for order " + id);
                    insert.addBatch();
                    if (id % BATCH == BATCH - 1) insert.executeBatch();
                }
                insert.executeBatch();
            }
            connection.commit();
            try (PreparedStatement byCustomer = connection.prepareStatement(
                    "SELECT COUNT(*), SUM(amount) FROM orders WHERE customer = ?")) {
                for (int round = 0; round < rounds; round++) {
                    rows += hash(digest, statement.executeQuery(
                            "SELECT c.city, COUNT(*), SUM(o.amount) FROM customer c JOIN orders o ON o.customer = c.id "
                                    + "GROUP BY c.city ORDER BY c.city"));
                    for (int i = 0; i < LOOKUPS; i++) {
                        byCustomer.setInt(1, (int) ((long) i * 7919 % customers));
                        rows += hash(digest, byCustomer.executeQuery());
                    }
                    rows += statement.executeUpdate("UPDATE orders SET amount = amount + 1 WHERE MOD(id, 7) = " + round);
                    connection.commit();
                }
            }
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : digest.digest()) hex.append(String.format("%02x", b));
        System.out.println("checksum " + hex);
        System.err.println("derby: " + orders + " orders, " + rounds + " rounds, " + rows + " rows");
    }

    /** Feeds every column of every row to the digest; the number of rows. */
    private static long hash(MessageDigest digest, ResultSet result) throws Exception {
        long rows = 0;
        try (result) {
            int columns = result.getMetaData().getColumnCount();
            while (result.next()) {
                for (int column = 1; column <= columns; column++) {
                    digest.update(String.valueOf(result.getString(column)).getBytes(StandardCharsets.UTF_8));
                    digest.update((byte) 0);
                }
                rows++;
            }
        }
        return rows;
    }
}
