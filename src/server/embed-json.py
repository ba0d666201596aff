#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Embed a JSON document as a C array: embed-json.py IN.json OUT.c SYMBOL. The document is
# parsed first, so a malformed one fails the build instead of being served.
import json
import sys

src, out, sym = sys.argv[1:4]
data = open(src, 'rb').read()
json.loads(data)
with open(out, 'w') as f:
    f.write('/* generated from %s by embed-json.py */\n#include <stddef.h>\n\n' % src.split('/')[-1])
    f.write('extern const char %s[];\nextern const size_t %s_len;\n' % (sym, sym))
    f.write('const char %s[] = {\n' % sym)
    for i in range(0, len(data), 16):
        f.write('\t' + ', '.join('0x%02x' % b for b in data[i:i + 16]) + ',\n')
    f.write('\t0x00\n};\nconst size_t %s_len = %d;\n' % (sym, len(data)))
