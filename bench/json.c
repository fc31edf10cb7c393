/* SPDX-License-Identifier: MIT */
#include "json.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

struct parser {
	const char *s;
	size_t len, pos;
};

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]))
		p->pos++;
}

static int expect_word(struct parser *p, const char *w)
{
	size_t n = strlen(w);
	if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n))
		return -EINVAL;
	p->pos += n;
	return 0;
}

static int hex4(struct parser *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++, p->pos++) {
		if (p->pos >= p->len)
			return -EINVAL;
		char c = p->s[p->pos];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
		if (d > 15)
			return -EINVAL;
		*v = *v * 16 + d;
	}
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* At the opening quote; the decoded string is never longer than its source. */
static int parse_string(struct parser *p, char **out)
{
	p->pos++;
	size_t start = p->pos;
	char *o = malloc(p->len - start + 1);
	if (!o)
		return -ENOMEM;
	size_t n = 0;
	for (;;) {
		if (p->pos >= p->len)
			goto bad;
		unsigned char c = (unsigned char)p->s[p->pos++];
		if (c == '"')
			break;
		if (c < 0x20)
			goto bad;
		if (c != '\\') {
			o[n++] = (char)c;
			continue;
		}
		if (p->pos >= p->len)
			goto bad;
		c = (unsigned char)p->s[p->pos++];
		const char *esc = strchr("\"\\/bfnrt", c);
		if (esc && c) {
			o[n++] = "\"\\/\b\f\n\r\t"[esc - "\"\\/bfnrt"];
			continue;
		}
		if (c != 'u')
			goto bad;
		unsigned cp, lo;
		if (hex4(p, &cp))
			goto bad;
		if (cp >= 0xd800 && cp < 0xdc00) { /* surrogate pair */
			if (expect_word(p, "\\u") || hex4(p, &lo) || lo < 0xdc00 || lo > 0xdfff)
				goto bad;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		} else if (cp >= 0xdc00 && cp < 0xe000) {
			goto bad;
		}
		n += put_utf8(o + n, cp);
	}
	o[n] = 0;
	char *fit = realloc(o, n + 1);
	*out = fit ? fit : o;
	return 0;
bad:
	free(o);
	return -EINVAL;
}

static int parse_number(struct parser *p, double *v)
{
	size_t i = p->pos;
	const char *s = p->s;
	if (i < p->len && s[i] == '-')
		i++;
	if (i >= p->len || !(s[i] >= '0' && s[i] <= '9'))
		return -EINVAL;
	if (s[i] == '0')
		i++;
	else
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	if (i < p->len && s[i] == '.') {
		size_t d = ++i;
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == d)
			return -EINVAL;
	}
	if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < p->len && (s[i] == '+' || s[i] == '-'))
			i++;
		size_t d = i;
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == d)
			return -EINVAL;
	}
	char buf[64];
	if (i - p->pos >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s + p->pos, i - p->pos);
	buf[i - p->pos] = 0;
	*v = strtod(buf, NULL);
	p->pos = i;
	return 0;
}

static int parse_value(struct parser *p, struct json *j, int depth);

static int add_item(struct json *j, size_t *cap)
{
	if (j->n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 8;
	struct json *items = realloc(j->items, nc * sizeof(*items));
	if (!items)
		return -ENOMEM;
	j->items = items;
	if (j->type == JSON_OBJ) {
		char **keys = realloc(j->keys, nc * sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		j->keys = keys;
	}
	*cap = nc;
	return 0;
}

static int parse_container(struct parser *p, struct json *j, int depth)
{
	bool obj = p->s[p->pos] == '{';
	char close = obj ? '}' : ']';
	j->type = obj ? JSON_OBJ : JSON_ARR;
	size_t cap = 0;
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		int rc = add_item(j, &cap);
		if (rc)
			return rc;
		char *key = NULL;
		skip_ws(p);
		if (obj) {
			if (p->pos >= p->len || p->s[p->pos] != '"' || parse_string(p, &key))
				return -EINVAL;
			skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':') {
				free(key);
				return -EINVAL;
			}
			p->pos++;
		}
		memset(&j->items[j->n], 0, sizeof(j->items[0]));
		if (obj)
			j->keys[j->n] = key;
		j->n++; /* counted before parsing so that json_free releases a half-parsed value */
		if ((rc = parse_value(p, &j->items[j->n - 1], depth + 1)))
			return rc;
		skip_ws(p);
		if (p->pos >= p->len)
			return -EINVAL;
		char c = p->s[p->pos++];
		if (c == close)
			return 0;
		if (c != ',')
			return -EINVAL;
	}
}

static int parse_value(struct parser *p, struct json *j, int depth)
{
	memset(j, 0, sizeof(*j));
	if (depth > MAX_DEPTH)
		return -EINVAL;
	skip_ws(p);
	if (p->pos >= p->len)
		return -EINVAL;
	switch (p->s[p->pos]) {
	case '{':
	case '[':
		return parse_container(p, j, depth);
	case '"':
		j->type = JSON_STR;
		return parse_string(p, &j->str);
	case 't':
		j->type = JSON_BOOL;
		j->num = 1;
		return expect_word(p, "true");
	case 'f':
		j->type = JSON_BOOL;
		return expect_word(p, "false");
	case 'n':
		return expect_word(p, "null");
	default:
		j->type = JSON_NUM;
		return parse_number(p, &j->num);
	}
}

int json_parse(const char *text, size_t len, struct json *out, size_t *err_off)
{
	struct parser p = {.s = text, .len = len};
	int rc = parse_value(&p, out, 0);
	if (!rc) {
		skip_ws(&p);
		if (p.pos != p.len)
			rc = -EINVAL;
	}
	if (rc) {
		json_free(out);
		if (err_off)
			*err_off = p.pos;
	}
	return rc;
}

int json_parse_file(const char *path, struct json *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	int rc = 0;
	do {
		if (len + 65536 > cap) {
			char *nb = realloc(buf, cap = len + 65536 * 4);
			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	fclose(f);
	size_t off = 0;
	if (!rc && (rc = json_parse(buf ? buf : "", len, out, &off)))
		fprintf(stderr, "vqs-bench: %s: malformed JSON at byte %zu\n", path, off);
	free(buf);
	return rc;
}

void json_free(struct json *j)
{
	for (size_t i = 0; i < j->n; i++) {
		json_free(&j->items[i]);
		if (j->keys)
			free(j->keys[i]);
	}
	free(j->items);
	free(j->keys);
	free(j->str);
	memset(j, 0, sizeof(*j));
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJ)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

double json_num_or(const struct json *obj, const char *key, double dflt)
{
	const struct json *v = json_get(obj, key);
	return v && (v->type == JSON_NUM || v->type == JSON_BOOL) ? v->num : dflt;
}

const char *json_str_or(const struct json *obj, const char *key, const char *dflt)
{
	const struct json *v = json_get(obj, key);
	return v && v->type == JSON_STR ? v->str : dflt;
}

void json_write_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void json_write_num(FILE *f, double v)
{
	if (v != v || v > 1e300 || v < -1e300)
		v = 0;
	fprintf(f, "%.6g", v);
}
