// H2 SQL workload for the ojx JVM overhead benchmark (bench/jvm/overhead.py).
//
// A fixed amount of work on an in-memory H2 database (Debian package libh2-java): create an order-entry schema,
// insert customers, products, orders and order lines from a seeded generator, then run joins, aggregates,
// updates and deletes. Prints one line "checksum <hex>" over every query result, so runs with and without an
// agent can be compared. Not time-bounded: the work is set by the arguments.
//
// usage: java -cp <classes>:/usr/share/java/h2.jar H2Workload [ORDERS [ROUNDS]]
//   ORDERS: orders to insert (default 30000; ~3 lines each, plus ORDERS/6 customers and ORDERS/60 products);
//   ROUNDS: rounds of the query mix (default 3)

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;

public final class H2Workload {
    private static final String[] REGIONS = {"north", "south", "east", "west", "central", "islands", "coast", "hills"};
    private static final String[] CATEGORIES = {"tools", "books", "garden", "music", "toys", "food", "office",
            "sports", "kitchen", "health", "auto", "pets"};

    private final Connection connection;
    private final MessageDigest digest;
    private long rows;
    private int customers;

    private H2Workload(Connection connection) throws Exception {
        this.connection = connection;
        this.digest = MessageDigest.getInstance("SHA-256");
    }

    /** Deterministic generator (64-bit LCG), so every run inserts the same data. */
    private static final class Lcg {
        private long state;
        Lcg(long seed) { state = seed; }
        int next(int bound) {
            state = state * 6364136223846793005L + 1442695040888963407L;
            return (int) Long.remainderUnsigned(state >>> 17, bound);
        }
    }

    private void execute(String sql) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    private void absorb(String text) {
        digest.update(text.getBytes(StandardCharsets.UTF_8));
        digest.update((byte) '\n');
    }

    /** Runs a query and folds every row of the result into the checksum. */
    private void query(String sql, Object... parameters) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            for (int i = 0; i < parameters.length; i++) {
                statement.setObject(i + 1, parameters[i]);
            }
            try (ResultSet result = statement.executeQuery()) {
                ResultSetMetaData meta = result.getMetaData();
                int columns = meta.getColumnCount();
                StringBuilder row = new StringBuilder();
                while (result.next()) {
                    row.setLength(0);
                    for (int c = 1; c <= columns; c++) {
                        Object value = result.getObject(c);
                        if (value instanceof BigDecimal) {
                            value = ((BigDecimal) value).stripTrailingZeros().toPlainString();
                        }
                        row.append(value).append('|');
                    }
                    absorb(row.toString());
                    rows++;
                }
            }
        }
    }

    private int update(String sql, Object... parameters) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            for (int i = 0; i < parameters.length; i++) {
                statement.setObject(i + 1, parameters[i]);
            }
            int count = statement.executeUpdate();
            absorb("update " + count);
            return count;
        }
    }

    private void load(int orders) throws SQLException {
        customers = Math.max(100, orders / 6);
        int products = Math.max(50, orders / 60);
        execute("CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, region VARCHAR(16) NOT NULL, "
                + "credit DECIMAL(12,2) NOT NULL)");
        execute("CREATE TABLE product (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, category VARCHAR(16) NOT NULL, "
                + "price DECIMAL(10,2) NOT NULL)");
        execute("CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL REFERENCES customer(id), "
                + "order_day INT NOT NULL, status VARCHAR(8) NOT NULL)");
        execute("CREATE TABLE order_line (order_id INT NOT NULL REFERENCES orders(id), line_no INT NOT NULL, "
                + "product_id INT NOT NULL REFERENCES product(id), quantity INT NOT NULL, "
                + "price DECIMAL(10,2) NOT NULL, PRIMARY KEY (order_id, line_no))");
        Lcg random = new Lcg(42);
        connection.setAutoCommit(false);
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO customer VALUES (?, ?, ?, ?)")) {
            for (int id = 1; id <= customers; id++) {
                insert.setInt(1, id);
                insert.setString(2, "customer-" + Integer.toString(id * 7919, 36));
                insert.setString(3, REGIONS[random.next(REGIONS.length)]);
                insert.setBigDecimal(4, BigDecimal.valueOf(random.next(1_000_000), 2));
                insert.addBatch();
                if (id % 1000 == 0) insert.executeBatch();
            }
            insert.executeBatch();
        }
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO product VALUES (?, ?, ?, ?)")) {
            for (int id = 1; id <= products; id++) {
                insert.setInt(1, id);
                insert.setString(2, "product " + Integer.toString(id * 104729, 36));
                insert.setString(3, CATEGORIES[random.next(CATEGORIES.length)]);
                insert.setBigDecimal(4, BigDecimal.valueOf(100 + random.next(50_000), 2));
                insert.addBatch();
            }
            insert.executeBatch();
        }
        String[] statuses = {"new", "paid", "shipped", "returned"};
        try (PreparedStatement order = connection.prepareStatement("INSERT INTO orders VALUES (?, ?, ?, ?)");
             PreparedStatement line = connection.prepareStatement("INSERT INTO order_line VALUES (?, ?, ?, ?, ?)")) {
            for (int id = 1; id <= orders; id++) {
                order.setInt(1, id);
                order.setInt(2, 1 + random.next(customers));
                order.setInt(3, random.next(365));
                order.setString(4, statuses[random.next(statuses.length)]);
                order.addBatch();
                int lines = 1 + random.next(5);
                for (int n = 1; n <= lines; n++) {
                    line.setInt(1, id);
                    line.setInt(2, n);
                    line.setInt(3, 1 + random.next(products));
                    line.setInt(4, 1 + random.next(9));
                    line.setBigDecimal(5, BigDecimal.valueOf(100 + random.next(50_000), 2));
                    line.addBatch();
                }
                if (id % 1000 == 0) {
                    order.executeBatch();
                    line.executeBatch();
                    connection.commit();
                }
            }
            order.executeBatch();
            line.executeBatch();
        }
        connection.commit();
        execute("CREATE INDEX order_line_product ON order_line(product_id)");
        execute("CREATE INDEX orders_customer ON orders(customer_id)");
        execute("CREATE INDEX orders_day ON orders(order_day)");
        connection.commit();
        connection.setAutoCommit(true);
        query("SELECT COUNT(*), SUM(quantity), SUM(quantity * price) FROM order_line");
    }

    private void rounds(int rounds) throws SQLException {
        for (int round = 0; round < rounds; round++) {
            // Revenue by region and category: a four-table join with grouping.
            query("SELECT c.region, p.category, COUNT(DISTINCT o.id), SUM(l.quantity * l.price) "
                    + "FROM orders o JOIN customer c ON c.id = o.customer_id "
                    + "JOIN order_line l ON l.order_id = o.id JOIN product p ON p.id = l.product_id "
                    + "WHERE o.status <> 'returned' GROUP BY c.region, p.category ORDER BY c.region, p.category");
            // Best customers of a quarter (index range on day, join, top-N).
            int from = (round * 61) % 300;
            query("SELECT o.customer_id, COUNT(*), SUM(l.quantity * l.price) AS total FROM orders o "
                    + "JOIN order_line l ON l.order_id = o.id WHERE o.order_day BETWEEN ? AND ? "
                    + "GROUP BY o.customer_id ORDER BY total DESC, o.customer_id LIMIT 25", from, from + 90);
            // Products never ordered at their list price, per category (correlated subquery).
            query("SELECT p.category, COUNT(*) FROM product p WHERE NOT EXISTS (SELECT 1 FROM order_line l "
                    + "WHERE l.product_id = p.id AND l.price = p.price) GROUP BY p.category ORDER BY p.category");
            // Per-day statistics with a window function.
            query("SELECT order_day, n, SUM(n) OVER (ORDER BY order_day ROWS BETWEEN 6 PRECEDING AND CURRENT ROW) "
                    + "FROM (SELECT order_day, COUNT(*) AS n FROM orders GROUP BY order_day) t ORDER BY order_day");
            // Point lookups through the primary key and secondary indexes.
            try (PreparedStatement lookup = connection.prepareStatement(
                    "SELECT o.id, o.order_day, o.status, SUM(l.quantity) FROM orders o "
                            + "JOIN order_line l ON l.order_id = o.id WHERE o.customer_id = ? "
                            + "GROUP BY o.id, o.order_day, o.status ORDER BY o.id")) {
                StringBuilder row = new StringBuilder();
                for (int customer = 1 + round; customer <= customers; customer += 3) {
                    lookup.setInt(1, customer);
                    try (ResultSet result = lookup.executeQuery()) {
                        while (result.next()) {
                            row.setLength(0);
                            row.append(result.getInt(1)).append('|').append(result.getInt(2)).append('|')
                                    .append(result.getString(3)).append('|').append(result.getLong(4));
                            absorb(row.toString());
                            rows++;
                        }
                    }
                }
            }
            // Updates: reprice a category, move orders along, credit customers of a region.
            String category = CATEGORIES[round % CATEGORIES.length];
            update("UPDATE product SET price = price * 1.05 WHERE category = ?", category);
            update("UPDATE orders SET status = 'shipped' WHERE status = 'paid' AND MOD(id, ?) = 0", 3 + round);
            update("UPDATE customer SET credit = credit + 10 WHERE region = ?", REGIONS[round % REGIONS.length]);
            update("DELETE FROM order_line WHERE order_id IN (SELECT id FROM orders WHERE status = 'returned' "
                    + "AND MOD(id, 97) = ?)", round);
            query("SELECT COUNT(*), SUM(credit) FROM customer");
        }
    }

    public static void main(String[] args) throws Exception {
        int orders = args.length > 0 ? Integer.parseInt(args[0]) : 30_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        long start = System.nanoTime();
        try (Connection connection = DriverManager.getConnection("jdbc:h2:mem:ojxbench;DB_CLOSE_DELAY=0", "sa", "")) {
            H2Workload workload = new H2Workload(connection);
            workload.load(orders);
            long loaded = System.nanoTime();
            workload.rounds(rounds);
            System.err.printf("h2: %d orders loaded in %.2f s, %d query rounds in %.2f s, %d result rows%n", orders,
                    (loaded - start) / 1e9, rounds, (System.nanoTime() - loaded) / 1e9, workload.rows);
            StringBuilder hex = new StringBuilder();
            for (byte b : workload.digest.digest()) hex.append(String.format("%02x", b));
            System.out.println("checksum " + hex);
        }
    }
}
