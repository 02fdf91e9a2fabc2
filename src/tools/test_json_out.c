/*
 * test_json_out.c - the tools' JSON writer (json_out.c): nesting, commas, inline containers,
 * escapes, and values that are not finite written as null.
 */
#include "json_out.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* What fn writes, as a string the caller frees. */
static char *written(void (*fn)(struct json_out *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    struct json_out j;
    json_out_init(&j, f);
    fn(&j);
    cr_assert_eq(fclose(f), 0);
    return buf;
}

static void nested(struct json_out *j)
{
    json_obj(j, 0);
    json_key(j, "a");
    json_int(j, 1);
    json_key(j, "list");
    json_list(j, 1);
    json_int(j, -2);
    json_str(j, "x");
    json_obj(j, 0); /* inside an inline list: inline too */
    json_key(j, "k");
    json_bool(j, 1);
    json_end(j);
    json_end(j);
    json_key(j, "rows");
    json_list(j, 0);
    json_uint(j, 18446744073709551615ull);
    json_null(j);
    json_end(j);
    json_key(j, "empty");
    json_obj(j, 0);
    json_end(j);
    json_end(j);
}

Test(json_out, nesting_commas_and_inline_containers)
{
    char *s = written(nested);
    cr_assert_str_eq(s, "{\n"
                        "  \"a\": 1,\n"
                        "  \"list\": [-2, \"x\", {\"k\": true}],\n"
                        "  \"rows\": [\n"
                        "    18446744073709551615,\n"
                        "    null\n"
                        "  ],\n"
                        "  \"empty\": {}\n"
                        "}\n");
    free(s);
}

static void numbers(struct json_out *j)
{
    json_list(j, 1);
    json_num(j, NAN, 6);
    json_num(j, -NAN, 6);
    json_num(j, INFINITY, 6);
    json_fixed(j, -INFINITY, 3);
    json_num(j, 0.1234567, 3);
    json_fixed(j, 2.5, 2);
    json_num(j, 1e-9, 6);
    json_end(j);
}

Test(json_out, values_that_are_not_finite_are_null)
{
    char *s = written(numbers);
    cr_assert_str_eq(s, "[null, null, null, null, 0.123, 2.50, 1e-09]\n");
    free(s);
}

static void strings(struct json_out *j)
{
    json_obj(j, 1);
    json_key(j, "q\"k");
    json_str(j, "a\\b\"c\n\t\x01 é");
    json_key(j, "none");
    json_str(j, NULL);
    json_end(j);
}

Test(json_out, strings_are_escaped)
{
    char *s = written(strings);
    cr_assert_str_eq(s, "{\"q\\\"k\": \"a\\\\b\\\"c\\u000a\\u0009\\u0001 é\", \"none\": null}\n");
    free(s);
}
