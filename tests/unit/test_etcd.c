// SPDX-License-Identifier: GPL-2.0
/* The etcd client's base64 (keys and values travel base64-encoded
 * through etcd's JSON gateway): RFC 4648 test vectors, binary round
 * trips, and malformed input refused. The plain-HTTP client's reading
 * of an answer (http_plain.h): Content-Length, chunked, to the end, and
 * malformed answers refused; and which URLs it takes. The HTTP side runs
 * against a real etcd in tests/e2e/test_fleet.sh (http://, plain) and
 * test_etcd_tls.sh (https://, libcurl). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "etcd.h"
#include "http_plain.h"

static void test_rfc4648_vectors(void **state)
{
	static const char *const plain[] = {"", "f", "fo", "foo", "foob",
					    "fooba", "foobar"};
	static const char *const enc[] = {"", "Zg==", "Zm8=", "Zm9v",
					  "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	char out[32], back[32];

	(void)state;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		assert_int_equal(rm_b64_encode(plain[i], strlen(plain[i]), out),
				 strlen(enc[i]));
		assert_string_equal(out, enc[i]);
		assert_int_equal(rm_b64_decode(enc[i], strlen(enc[i]), back),
				 (int)strlen(plain[i]));
		assert_string_equal(back, plain[i]);
	}
}

static void test_binary_roundtrip(void **state)
{
	unsigned char in[300], back[301];
	char enc[4 * 100 + 1];
	uint32_t x = 12345;

	(void)state;
	for (size_t n = 0; n < sizeof(in); n++) {
		x = x * 1103515245u + 12345u;
		in[n] = (unsigned char)(x >> 16);
	}
	for (size_t n = 0; n <= sizeof(in); n += 7) {
		size_t e = rm_b64_encode(in, n, enc);

		assert_int_equal(e, 4 * ((n + 2) / 3));
		assert_int_equal(rm_b64_decode(enc, e, back), (int)n);
		assert_memory_equal(in, back, n);
	}
}

static void test_malformed_refused(void **state)
{
	char out[16];

	(void)state;
	assert_int_equal(rm_b64_decode("Zm9", 3, out), -EINVAL);   /* length */
	assert_int_equal(rm_b64_decode("Zm*v", 4, out), -EINVAL);  /* alphabet */
	assert_int_equal(rm_b64_decode("Z=9v", 4, out), -EINVAL);  /* padding */
	assert_int_equal(rm_b64_decode("Zm\0v", 4, out), -EINVAL); /* NUL */
}

/* One answer read: status and body, or the error. */
static int parse(const char *raw, long *code, char **body, size_t *len)
{
	return rm_http_parse_answer(raw, strlen(raw), code, body, len);
}

static void test_http_answers(void **state)
{
	static const struct {
		const char *raw;
		long code;
		const char *body;
	} ok[] = {
	    {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	     "Content-Length: 7\r\n\r\n{\"a\":1}", 200, "{\"a\":1}"},
	    /* what follows Content-Length is not the body */
	    {"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}junk", 200,
	     "{}"},
	    /* etcd's gateway chunks a longer answer; extensions ignored */
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	     "4\r\n{\"k\"\r\nA;ext=1\r\n:\"0123456\"\r\n1\r\n}\r\n0\r\n\r\n",
	     200, "{\"k\":\"0123456\"}"},
	    {"HTTP/1.1 400 Bad Request\r\nGrpc-Metadata-Content-Type: x\r\n"
	     "\r\n{\"message\":\"etcdserver: permission denied\"}", 400,
	     "{\"message\":\"etcdserver: permission denied\"}"},
	    {"HTTP/1.0 404 Not Found\r\n\r\n", 404, ""},
	};
	static const char *const bad[] = {
	    "", "garbage\r\n\r\n", "HTTP/1.1 200 OK\r\nno end of headers",
	    "HTTP/2 200\r\n\r\n", "HTTP/1.1 99 x\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
	    "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5\r\nab\r\n0\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "zz\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "2\r\nab",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "fffffffffffffffffff\r\nab\r\n",
	};
	char *body;
	size_t len;
	long code;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		code = 0;
		assert_int_equal(parse(ok[i].raw, &code, &body, &len), 0);
		assert_int_equal(code, ok[i].code);
		assert_string_equal(body, ok[i].body);
		assert_int_equal(len, strlen(ok[i].body));
		free(body);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		body = (char *)1;
		assert_int_equal(parse(bad[i], &code, &body, &len), -EPROTO);
		assert_null(body);
	}
	/* a NUL inside an answer is not HTTP */
	assert_int_equal(rm_http_parse_answer("HTTP/1.1 200 OK\r\n\r\na\0b",
					      24, &code, &body, &len),
			 -EPROTO);
}

static void test_http_urls(void **state)
{
	static const char *const yes[] = {
	    "http://127.0.0.1:2379", "http://etcd", "http://[2001:db8::1]:2379",
	    "http://[::1]", "http://etcd.example:80"};
	static const char *const no[] = {
	    "https://127.0.0.1:2379", "http://", "http://:2379",
	    "http://host:", "http://host:123456", "http://host:12a",
	    "http://host/path", "http://[::1", "http://[::1]x", "ftp://x",
	    "127.0.0.1:2379"};

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(rm_http_plain_url(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(rm_http_plain_url(no[i]));
	assert_false(rm_http_plain_url(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rfc4648_vectors),
	    cmocka_unit_test(test_binary_roundtrip),
	    cmocka_unit_test(test_malformed_refused),
	    cmocka_unit_test(test_http_answers),
	    cmocka_unit_test(test_http_urls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
