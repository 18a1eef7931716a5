# SPDX-License-Identifier: Apache-2.0
# cmake -DIN=file -DOUT=file.cpp -DSYMBOL=name -P embed_bytes.cmake
# Writes a C++ source defining `extern "C" const unsigned char SYMBOL[]` with
# the bytes of IN and `SYMBOL_size`.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR size "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" body "${body}")
file(WRITE ${OUT}.tmp "// Generated from ${IN} by cmake/embed_bytes.cmake: do not edit.\n"
  "extern \"C\" const unsigned char ${SYMBOL}[] = {\n${body}\n};\n"
  "extern \"C\" const unsigned long ${SYMBOL}_size = ${size};\n")
file(RENAME ${OUT}.tmp ${OUT})
