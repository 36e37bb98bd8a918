package dev.settle.portability;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Rejects SQL shapes that MySQL 8.4 refuses or has deprecated, or that only MariaDB (or only MySQL) knows, so that
 * every statement means the same on MySQL 8.4 and MariaDB 10.11 / 11.4. The rules and their manual references are
 * listed in docs/COMPATIBILITY.md.
 *
 * <p>The check works on text, not on a full parse: comments are dropped, quoted literals are blanked (so a word in a
 * string never matches), identifiers are unquoted and everything is upper-cased; each rule then looks at the
 * statement's structure through its parenthesis depth.
 */
final class SqlPortability {
    /** One broken rule in one statement. */
    record Finding(String rule, String detail) {
        @Override
        public String toString() {
            return rule + ": " + detail;
        }
    }

    /** Builds a derived table that MySQL cannot merge into the outer query, so it is materialized first. */
    private static final Pattern MERGE_BLOCKER = Pattern.compile(
            "\\b(?:(?:MIN|MAX|SUM|COUNT|AVG|GROUP_CONCAT|BIT_AND|BIT_OR|BIT_XOR|STD|STDDEV|VARIANCE|JSON_ARRAYAGG"
                    + "|JSON_OBJECTAGG)\\s*\\(|DISTINCT\\b|GROUP\\s+BY\\b|HAVING\\b|LIMIT\\b|UNION\\b)");

    /**
     * Functions that exist in MariaDB (10.11, or 11.4 for KDF and the JSON_ARRAY_INTERSECT family) but not in MySQL
     * 8.4 (not in its function index, or removed in 8.0), and the reverse: functions of MySQL 8.4 that MariaDB 10.11
     * answers with "FUNCTION does not exist". Each was run on the local MariaDB 10.11.
     */
    static final List<String> MARIADB_ONLY_FUNCTIONS = List.of(
            "JSON_DETAILED",
            "JSON_LOOSE",
            "JSON_COMPACT",
            "JSON_EXISTS",
            "JSON_QUERY",
            "JSON_NORMALIZE",
            "JSON_EQUALS",
            "JSON_ARRAY_INTERSECT",
            "JSON_OBJECT_FILTER_KEYS",
            "JSON_OBJECT_TO_ARRAY",
            "COLUMN_CREATE",
            "COLUMN_GET",
            "COLUMN_ADD",
            "COLUMN_DELETE",
            "COLUMN_EXISTS",
            "COLUMN_LIST",
            "COLUMN_CHECK",
            "COLUMN_JSON",
            "DECODE_HISTOGRAM",
            "NEXTVAL",
            "LASTVAL",
            "SETVAL",
            "NATURAL_SORT_KEY",
            "SFORMAT",
            "TO_CHAR",
            "ADD_MONTHS",
            "CHR",
            "LENGTHB",
            "SYS_GUID",
            "NVL",
            "NVL2",
            "DECODE",
            "DECODE_ORACLE",
            "ENCODE",
            "ENCRYPT",
            "DES_ENCRYPT",
            "DES_DECRYPT",
            "PASSWORD",
            "KDF",
            "WSREP_LAST_SEEN_GTID",
            "WSREP_LAST_WRITTEN_GTID",
            "WSREP_SYNC_WAIT_UPTO_GTID");

    static final List<String> MYSQL_ONLY_FUNCTIONS = List.of(
            "UUID_TO_BIN",
            "BIN_TO_UUID",
            "IS_UUID",
            "ANY_VALUE",
            "STATEMENT_DIGEST",
            "STATEMENT_DIGEST_TEXT",
            "REGEXP_LIKE",
            "JSON_SCHEMA_VALID",
            "JSON_SCHEMA_VALIDATION_REPORT",
            "JSON_STORAGE_SIZE",
            "JSON_STORAGE_FREE",
            "GROUPING",
            "ICU_VERSION",
            "ROLES_GRAPHML");

    private SqlPortability() {}

    /**
     * {@link #check(String)}, and: no {@code INSERT ... SELECT} into a table of {@code autoIncrementTables}. Under
     * {@code innodb_autoinc_lock_mode = 1} (MariaDB's default; MySQL 8.4's is 2) it holds the table's AUTO-INC lock
     * until it ends, so one that stalls holds up every insert into the table; a conditional insert is written as
     * {@code dev.settle.schema.GuardedInsert} says.
     */
    static List<Finding> check(String sql, Set<String> autoIncrementTables) {
        List<Finding> findings = new ArrayList<>(check(sql));
        String target = insertSelectTarget(sql);
        if (target != null && autoIncrementTables.contains(target)) {
            findings.add(new Finding(
                    "AUTO_INC_INSERT_SELECT",
                    "INSERT ... SELECT into " + target
                            + ", whose key is AUTO_INCREMENT, holds the table's AUTO-INC lock "
                            + "to its end on MariaDB (innodb_autoinc_lock_mode 1): write a single-row INSERT ... VALUES "
                            + "with the condition in a scalar subquery (GuardedInsert)"));
        }
        return findings;
    }

    private static final Pattern CREATE_TABLE =
            Pattern.compile("^CREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?(\\w+)");

    /** The tables that a {@code CREATE TABLE} among {@code statements} gives an AUTO_INCREMENT column. */
    static Set<String> autoIncrementTables(Collection<String> statements) {
        Set<String> tables = new TreeSet<>();
        for (String sql : statements) {
            String s = normalize(sql);
            Matcher m = CREATE_TABLE.matcher(s);
            if (m.find() && s.contains(" AUTO_INCREMENT")) {
                tables.add(m.group(1));
            }
        }
        return tables;
    }

    /** The target of an INSERT whose rows come from a SELECT (not from VALUES: a subquery there does not count). */
    static String insertSelectTarget(String sql) {
        String s = normalize(sql);
        int[] depth = depths(s);
        Matcher m = INSERT_HEAD.matcher(s);
        if (!m.find()) {
            return null;
        }
        int values = topLevel(s, depth, " VALUE", m.end());
        int select = topLevel(s, depth, " SELECT ", m.end());
        return select >= 0 && (values < 0 || select < values) ? m.group(1) : null;
    }

    static List<Finding> check(String sql) {
        String s = normalize(sql);
        int[] depth = depths(s);
        List<Finding> findings = new ArrayList<>();
        subqueryOnTarget(s, depth, findings);
        upsert(s, findings);
        find(
                s,
                "\\bRETURNING\\b",
                "RETURNING",
                "RETURNING exists only in MariaDB (INSERT/DELETE/REPLACE ... RETURNING)",
                findings);
        find(
                s,
                "\\b(?:NEXT|PREVIOUS)\\s+VALUE\\s+FOR\\b|\\b(?:CREATE|ALTER|DROP)\\s+SEQUENCE\\b",
                "SEQUENCE",
                "sequences exist only in MariaDB",
                findings);
        for (String f : MARIADB_ONLY_FUNCTIONS) {
            find(
                    s,
                    "(?<![.\\w])" + f + "\\s*\\(",
                    "MARIADB_ONLY_FUNCTION",
                    f + "() does not exist in MySQL 8.4",
                    findings);
        }
        for (String f : MYSQL_ONLY_FUNCTIONS) {
            find(s, "(?<![.\\w])" + f + "\\s*\\(", "MYSQL_ONLY_FUNCTION", f + "() does not exist in MariaDB", findings);
        }
        find(
                s,
                "\\b(?:ADD|DROP|MODIFY|CHANGE)\\s+(?:COLUMN\\s+|INDEX\\s+|KEY\\s+|CONSTRAINT\\s+)?IF\\s+(?:NOT\\s+)?EXISTS\\b"
                        + "|\\bCREATE\\s+(?:UNIQUE\\s+)?INDEX\\s+IF\\s+NOT\\s+EXISTS\\b|\\bCREATE\\s+OR\\s+REPLACE\\s+TABLE\\b"
                        + "|\\bSYSTEM\\s+VERSIONING\\b|\\bFOR\\s+SYSTEM_TIME\\b",
                "MARIADB_ONLY_DDL",
                "IF [NOT] EXISTS on columns/indexes, CREATE OR REPLACE TABLE and system versioning "
                        + "are MariaDB only",
                findings);
        find(
                s,
                "\\bFOR\\s+(?:UPDATE|SHARE)\\s+WAIT\\s+\\d|\\bLOCK\\s+IN\\s+SHARE\\s+MODE\\s+WAIT\\s+\\d|\\bROWS\\s+EXAMINED\\b"
                        + "|\\bFETCH\\s+(?:FIRST|NEXT)\\s+\\S+\\s+ROWS?\\b|\\bOFFSET\\s+\\S+\\s+ROWS\\b",
                "MARIADB_ONLY_CLAUSE",
                "WAIT n, LIMIT ROWS EXAMINED and OFFSET/FETCH are MariaDB only",
                findings);
        find(
                s,
                "\\bFOR\\s+(?:UPDATE|SHARE)\\b[^()]*\\bLIMIT\\b",
                "LOCKING_CLAUSE_POSITION",
                "FOR UPDATE / FOR SHARE [SKIP LOCKED | NOWAIT] goes after ORDER BY and LIMIT",
                findings);
        limitInInSubquery(s, depth, findings);
        multiTableOrderLimit(s, depth, findings);
        return findings;
    }

    /** Drops comments (keeps optimizer hints), blanks quoted literals, unquotes identifiers, collapses whitespace. */
    static String normalize(String sql) {
        StringBuilder out = new StringBuilder(sql.length());
        int i = 0;
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            if (c == '-'
                    && i + 1 < n
                    && sql.charAt(i + 1) == '-'
                    && (i + 2 >= n || Character.isWhitespace(sql.charAt(i + 2)))) {
                while (i < n && sql.charAt(i) != '\n') {
                    i++;
                }
                out.append(' ');
            } else if (c == '#') {
                while (i < n && sql.charAt(i) != '\n') {
                    i++;
                }
                out.append(' ');
            } else if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*' && !(i + 2 < n && sql.charAt(i + 2) == '+')) {
                int end = sql.indexOf("*/", i + 2);
                i = end < 0 ? n : end + 2;
                out.append(' ');
            } else if (c == '\'' || c == '"') {
                int j = i + 1;
                while (j < n) {
                    char d = sql.charAt(j);
                    if (d == '\\') {
                        j += 2;
                    } else if (d == c && j + 1 < n && sql.charAt(j + 1) == c) {
                        j += 2;
                    } else if (d == c) {
                        break;
                    } else {
                        j++;
                    }
                }
                out.append("''");
                i = j + 1;
            } else if (c == '`') {
                i++;
            } else {
                out.append(Character.isWhitespace(c) ? ' ' : c);
                i++;
            }
        }
        return out.toString().replaceAll(" +", " ").trim().toUpperCase(Locale.ROOT);
    }

    /** depth[i]: parentheses open before position i. */
    private static int[] depths(String s) {
        int[] depth = new int[s.length() + 1];
        int d = 0;
        for (int i = 0; i < s.length(); i++) {
            depth[i] = d;
            if (s.charAt(i) == '(') {
                d++;
            } else if (s.charAt(i) == ')') {
                d--;
            }
        }
        depth[s.length()] = d;
        return depth;
    }

    private static void find(String s, String regex, String rule, String detail, List<Finding> findings) {
        Matcher m = Pattern.compile(regex).matcher(s);
        if (m.find()) {
            findings.add(new Finding(rule, detail + " (at \"" + excerpt(s, m.start()) + "\")"));
        }
    }

    private static final Pattern UPDATE_HEAD = Pattern.compile("^UPDATE\\s+(?:LOW_PRIORITY\\s+)?(?:IGNORE\\s+)?");
    private static final Pattern DELETE_HEAD =
            Pattern.compile("^DELETE\\s+(?:LOW_PRIORITY\\s+)?(?:QUICK\\s+)?(?:IGNORE\\s+)?");
    private static final Pattern INSERT_HEAD = Pattern.compile(
            "^(?:INSERT|REPLACE)\\s+(?:LOW_PRIORITY\\s+|DELAYED\\s+|HIGH_PRIORITY\\s+)?(?:IGNORE\\s+)?(?:INTO\\s+)?(\\w+)");
    private static final Pattern TABLE_REF = Pattern.compile("(?:^|\\bJOIN\\s+|,\\s*)(\\w+)");

    /**
     * MySQL refuses to modify a table and read the same table in a subquery of that statement (error 1093) unless the
     * read is inside a derived table that is materialized (one that cannot be merged: it aggregates, or has DISTINCT,
     * GROUP BY, HAVING, LIMIT or UNION). For INSERT ... SELECT the target may be in the SELECT's own FROM clause,
     * never in a subquery.
     */
    private static void subqueryOnTarget(String s, int[] depth, List<Finding> findings) {
        List<String> targets = new ArrayList<>();
        Matcher m;
        if ((m = UPDATE_HEAD.matcher(s)).find()) {
            int set = topLevel(s, depth, " SET ", m.end());
            tablesAtDepthZero(s.substring(m.end(), set < 0 ? s.length() : set), targets);
        } else if ((m = DELETE_HEAD.matcher(s)).find()) {
            int from = topLevel(s, depth, "FROM ", m.end());
            if (from >= 0) {
                int end = firstTopLevel(s, depth, from, " WHERE ", " USING ", " ORDER BY ", " LIMIT ");
                tablesAtDepthZero(s.substring(from + 5, end), targets);
            }
        } else if ((m = INSERT_HEAD.matcher(s)).find()) {
            targets.add(m.group(1));
        } else {
            return;
        }
        for (String table : targets) {
            Matcher ref = Pattern.compile("(?:\\bFROM|\\bJOIN|,)\\s+" + Pattern.quote(table) + "\\b(?!\\s*\\.)")
                    .matcher(s);
            while (ref.find()) {
                if (depth[ref.start()] == 0) {
                    continue;
                }
                if (!insideMaterializedDerivedTable(s, depth, ref.start())) {
                    findings.add(new Finding(
                            "SUBQUERY_ON_TARGET",
                            "the statement modifies " + table
                                    + " and reads it in a subquery (MySQL error 1093); read it through a derived table that "
                                    + "cannot be merged, (SELECT MIN(...) ... FROM " + table + " ...) AS x (at \""
                                    + excerpt(s, ref.start()) + "\")"));
                    return;
                }
            }
        }
    }

    private static void tablesAtDepthZero(String region, List<String> targets) {
        int d = 0;
        StringBuilder flat = new StringBuilder();
        for (char c : region.toCharArray()) {
            if (c == '(') {
                d++;
                if (d == 1) {
                    flat.append(" ( ");
                }
            } else if (c == ')') {
                d--;
            } else if (d == 0) {
                flat.append(c);
            }
        }
        Matcher t = TABLE_REF.matcher(flat.toString().trim());
        while (t.find()) {
            targets.add(t.group(1));
        }
    }

    private static boolean insideMaterializedDerivedTable(String s, int[] depth, int at) {
        int d = depth[at];
        for (int level = d; level >= 1; level--) {
            int open = -1;
            for (int i = at; i >= 0; i--) {
                if (s.charAt(i) == '(' && depth[i] == level - 1) {
                    open = i;
                    break;
                }
            }
            if (open < 0) {
                return false;
            }
            int close = s.length();
            for (int i = open + 1; i < s.length(); i++) {
                if (s.charAt(i) == ')' && depth[i] == level) {
                    close = i;
                    break;
                }
            }
            String before = s.substring(0, open).trim();
            String after = s.substring(Math.min(close + 1, s.length())).trim();
            boolean derived = (before.endsWith("FROM") || before.endsWith("JOIN") || before.endsWith(","))
                    && after.matches("^(?:AS\\s+)?(?!ON\\b|WHERE\\b|SET\\b|USING\\b)\\w+.*");
            if (derived && ownLevelMatches(s, depth, open + 1, close, level, MERGE_BLOCKER)) {
                return true;
            }
        }
        return false;
    }

    private static boolean ownLevelMatches(String s, int[] depth, int from, int to, int level, Pattern p) {
        Matcher m = p.matcher(s).region(from, to);
        while (m.find()) {
            if (depth[m.start()] == level) {
                return true;
            }
        }
        return false;
    }

    private static void upsert(String s, List<Finding> findings) {
        int odku = s.indexOf("ON DUPLICATE KEY UPDATE");
        if (odku < 0) {
            return;
        }
        Matcher values = Pattern.compile("(?<![.\\w])VALUES\\s*\\(").matcher(s);
        if (values.find(odku)) {
            findings.add(new Finding(
                    "VALUES_IN_UPSERT",
                    "VALUES(col) in ON DUPLICATE KEY UPDATE is deprecated since "
                            + "MySQL 8.0.20; bind the value again (at \"" + excerpt(s, values.start()) + "\")"));
        }
        Matcher rowAlias = Pattern.compile("\\)\\s+AS\\s+\\w+(?:\\s*\\([^()]*\\))?\\s+ON DUPLICATE KEY UPDATE")
                .matcher(s);
        if (rowAlias.find()) {
            findings.add(new Finding(
                    "UPSERT_ROW_ALIAS",
                    "INSERT ... VALUES (...) AS alias ON DUPLICATE KEY UPDATE is "
                            + "MySQL only; bind the value again (at \"" + excerpt(s, rowAlias.start()) + "\")"));
        }
    }

    /** Both refuse LIMIT in a subquery of IN/ALL/ANY/SOME (MySQL error 1235, MariaDB the same). */
    private static void limitInInSubquery(String s, int[] depth, List<Finding> findings) {
        // "UNION ALL (SELECT ...)" is a set operation, not an ALL subquery
        Matcher m = Pattern.compile("\\b(?:IN|ANY|SOME|(?<!UNION )ALL)\\s*\\(\\s*SELECT\\b")
                .matcher(s);
        while (m.find()) {
            int open = s.indexOf('(', m.start());
            int level = depth[open] + 1;
            int close = s.length();
            for (int i = open + 1; i < s.length(); i++) {
                if (s.charAt(i) == ')' && depth[i] == level) {
                    close = i;
                    break;
                }
            }
            if (ownLevelMatches(s, depth, open + 1, close, level, Pattern.compile("\\bLIMIT\\b"))) {
                findings.add(new Finding(
                        "LIMIT_IN_IN_SUBQUERY",
                        "LIMIT inside an IN/ALL/ANY/SOME subquery (error " + "1235); wrap it in a derived table (at \""
                                + excerpt(s, m.start()) + "\")"));
                return;
            }
        }
    }

    /** ORDER BY and LIMIT are allowed only in single-table UPDATE and DELETE, on both. */
    private static void multiTableOrderLimit(String s, int[] depth, List<Finding> findings) {
        boolean update = s.startsWith("UPDATE ");
        boolean delete = s.startsWith("DELETE ");
        if (!update && !delete) {
            return;
        }
        int end = firstTopLevel(s, depth, 0, " WHERE ");
        String head = s.substring(0, end);
        boolean multi = head.contains(" JOIN ")
                || (delete
                        && Pattern.compile("^DELETE\\s+\\w+(?:\\s*,\\s*\\w+)*\\s+FROM\\b")
                                .matcher(head)
                                .find())
                || (update
                        && topLevel(head, depth, ",", 0) >= 0
                        && topLevel(head, depth, ",", 0) < Math.max(0, topLevel(s, depth, " SET ", 0)));
        if (multi && (topLevel(s, depth, " ORDER BY ", end) >= 0 || topLevel(s, depth, " LIMIT ", end) >= 0)) {
            findings.add(new Finding("MULTI_TABLE_ORDER_LIMIT", "ORDER BY / LIMIT in a multi-table UPDATE or DELETE"));
        }
    }

    private static int topLevel(String s, int[] depth, String word, int from) {
        int i = s.indexOf(word, from);
        while (i >= 0 && depth[i] != 0) {
            i = s.indexOf(word, i + 1);
        }
        return i;
    }

    private static int firstTopLevel(String s, int[] depth, int from, String... words) {
        int best = s.length();
        for (String w : words) {
            int i = topLevel(s, depth, w, from);
            if (i >= 0 && i < best) {
                best = i;
            }
        }
        return best;
    }

    private static String excerpt(String s, int at) {
        return s.substring(Math.max(0, at - 30), Math.min(s.length(), at + 50));
    }
}
