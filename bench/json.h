/* SPDX-License-Identifier: MIT */
/* A small JSON reader (RFC 8259 values into a tree), enough to read vqs-bench reports back, and
 * the two value writers the reports are written with. */
#ifndef VQS_BENCH_JSON_H
#define VQS_BENCH_JSON_H

#include <stddef.h>
#include <stdio.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ };

struct json {
	enum json_type type;
	double num;          /* NUM, and BOOL as 0/1 */
	char *str;           /* STR */
	struct json *items;  /* ARR elements, OBJ values */
	char **keys;         /* OBJ keys */
	size_t n;
};

/* Parse a whole document. 0, or -EINVAL with *err_off at the offending byte. */
int json_parse(const char *text, size_t len, struct json *out, size_t *err_off);
int json_parse_file(const char *path, struct json *out);
void json_free(struct json *j);
/* Member of an object (NULL when absent or not an object). */
const struct json *json_get(const struct json *obj, const char *key);
double json_num_or(const struct json *obj, const char *key, double dflt);
const char *json_str_or(const struct json *obj, const char *key, const char *dflt);

/* Write a string (quoted, escaped) / a number as JSON allows it (NaN and infinities as 0). */
void json_write_str(FILE *f, const char *s);
void json_write_num(FILE *f, double v);

#endif
