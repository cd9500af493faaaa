// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: the text parsers every tool shares (user/lib/util.c).
 * The first byte picks the parser, the rest is its argument. Oracles: no
 * crash or sanitizer report, and what a parser accepts formats back to
 * text that parses to the same value (the MAC and seed to the canonical
 * spelling of the input itself). */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "fuzz.h"
#include "util.h"

static void check_u32(const char *s)
{
	__u32 v = 0, min = 0, max = UINT32_MAX;
	char back[16];

	if (s[0] && s[1]) { /* a range from the text's own length */
		min = (__u32)strlen(s) % 7;
		max = min + 1000000;
	}
	if (rm_parse_u32(s, min, max, &v))
		return;
	FUZZ_ASSERT(v >= min && v <= max);
	snprintf(back, sizeof(back), "%u", v);
	/* leading zeros are the only other spelling it takes */
	while (s[0] == '0' && s[1])
		s++;
	FUZZ_ASSERT(!strcmp(back, s));
}

static void check_addr(const char *s)
{
	__be32 a[4], b[4];
	__u8 fam, fam2;
	char text[64];

	if (rm_parse_addr(s, a, &fam))
		return;
	FUZZ_ASSERT(fam == RM_FAMILY_V4 || fam == RM_FAMILY_V6);
	rm_format_addr(a, fam, text, sizeof(text));
	FUZZ_ASSERT(!rm_parse_addr(text, b, &fam2));
	FUZZ_ASSERT(fam == fam2 && !memcmp(a, b, sizeof(a)));
}

static void check_mac(const char *s)
{
	__u8 m[6];
	char text[18];

	if (rm_parse_mac(s, m))
		return;
	rm_format_mac(m, text);
	for (int i = 0; i < 17; i++)
		FUZZ_ASSERT(text[i] == tolower((unsigned char)s[i]));
	FUZZ_ASSERT(s[17] == '\0');
}

static void check_seed(const char *s)
{
	struct rm_seed a, b;
	char text[33];

	if (rm_parse_seed(s, &a))
		return;
	rm_format_seed(&a, text);
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (int i = 0; i < 32; i++)
		FUZZ_ASSERT(text[i] == tolower((unsigned char)s[i]));
	FUZZ_ASSERT(!rm_parse_seed(text, &b));
	FUZZ_ASSERT(a.k0 == b.k0 && a.k1 == b.k1);
}

static void check_nodes(const char *s)
{
	struct rm_node_spec *specs;
	__u32 n, commas = 0;

	if (rm_parse_nodes(s, &specs, &n))
		return;
	for (const char *p = s; *p; p++)
		commas += *p == ',';
	FUZZ_ASSERT(n == commas + 1);
	for (__u32 i = 0; i < n; i++) {
		FUZZ_ASSERT(rm_name_valid(specs[i].name));
		FUZZ_ASSERT(specs[i].weight >= 1 &&
			    specs[i].weight <= RM_MAX_WEIGHT);
		FUZZ_ASSERT(specs[i].id == i);
	}
	free(specs);
}

static void check_proto_name(const char *s)
{
	__u8 p;

	if (!rm_parse_proto(s, &p))
		FUZZ_ASSERT(!strcmp(rm_proto_name(p), s));
	if (rm_name_valid(s))
		FUZZ_ASSERT(strlen(s) < RM_NAME_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1)
		return 0;
	s = fuzz_str(data + 1, size - 1);
	if (!s)
		return 0;
	switch (data[0] % 6) {
	case 0: check_u32(s); break;
	case 1: check_addr(s); break;
	case 2: check_mac(s); break;
	case 3: check_seed(s); break;
	case 4: check_nodes(s); break;
	default: check_proto_name(s); break;
	}
	free(s);
	return 0;
}
