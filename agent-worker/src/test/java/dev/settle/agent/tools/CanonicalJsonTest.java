package dev.settle.agent.tools;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class CanonicalJsonTest {

    @Test
    void key_order_nesting_order_whitespace_and_number_spelling_do_not_matter() {
        String a =
                CanonicalJson.of("{\"amount\": 35, \"category\": \"food\", \"meta\": {\"b\": [1, 2.50], \"a\": true}}");
        String b = CanonicalJson.of("{\"meta\":{\"a\":true,\"b\":[1.0,2.5]},\"category\":\"food\",\"amount\":3.5e1}");
        String c = CanonicalJson.of(
                "{ \"category\" : \"food\" ,\n \"amount\" : 35.000, \"meta\" : { \"b\" : [ 1E0 , 25e-1 ] , \"a\" : true } }");
        assertEquals(a, b);
        assertEquals(a, c);
        assertEquals("{\"amount\":35,\"category\":\"food\",\"meta\":{\"a\":true,\"b\":[1,2.5]}}", a);
    }

    @Test
    void different_values_array_order_and_types_stay_different() {
        assertNotEquals(CanonicalJson.of("{\"amount\":35}"), CanonicalJson.of("{\"amount\":35.01}"));
        assertNotEquals(CanonicalJson.of("{\"amount\":35}"), CanonicalJson.of("{\"amount\":\"35\"}"));
        assertNotEquals(CanonicalJson.of("[1,2]"), CanonicalJson.of("[2,1]"));
        assertEquals(CanonicalJson.of("{\"x\":0}"), CanonicalJson.of("{\"x\":-0.0}"));
        assertEquals(CanonicalJson.of("{\"x\":350}"), CanonicalJson.of("{\"x\":3.5e2}"));
    }

    @Test
    void huge_exponents_stay_short_and_invalid_json_is_refused() {
        assertEquals("{\"x\":1E+1000000}", CanonicalJson.of("{\"x\":1e1000000}"));
        assertThrows(IllegalArgumentException.class, () -> CanonicalJson.of("{\"amount\":"));
        assertEquals("{}", CanonicalJson.of(""));
    }

    @Test
    void the_idempotency_key_covers_span_tool_arguments_and_ordinal() {
        String identity = "create_transaction\n" + CanonicalJson.of("{\"amount\":35,\"category\":\"food\"}");
        String key = ExactlyOnceToolExecutor.key(7, 1, identity, 1);
        assertEquals(
                key,
                ExactlyOnceToolExecutor.key(
                        7, 1, "create_transaction\n" + CanonicalJson.of("{\"category\":\"food\",\"amount\":35.0}"), 1));
        assertNotEquals(key, ExactlyOnceToolExecutor.key(7, 1, identity, 2), "second identical call");
        assertNotEquals(key, ExactlyOnceToolExecutor.key(7, 4, identity, 1), "another span");
        assertNotEquals(key, ExactlyOnceToolExecutor.key(8, 1, identity, 1), "another session");
        assertEquals(64, key.length());
    }
}
