// SPDX-License-Identifier: GPL-2.0
/* The etcd client's base64 (keys and values travel base64-encoded
 * through etcd's JSON gateway): RFC 4648 test vectors, binary round
 * trips, and malformed input refused. The HTTP side runs against a real
 * etcd in tests/e2e/test_fleet.sh. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "etcd.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rfc4648_vectors),
	    cmocka_unit_test(test_binary_roundtrip),
	    cmocka_unit_test(test_malformed_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
