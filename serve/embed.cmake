# serve/embed.cmake — run at build time (cmake -P): puts page.css and page.js inline into
# page.html (at the /*PAGE_CSS*/ and /*PAGE_JS*/ markers) and writes it as a C array to OUT
# (serve/page.h declares it). Arguments: -DSRC=<serve folder> -DOUT=<file.c>.
file(READ ${SRC}/page.html html)
file(READ ${SRC}/page.css css)
file(READ ${SRC}/page.js js)
string(REPLACE "/*PAGE_CSS*/" "${css}" html "${html}")
string(REPLACE "/*PAGE_JS*/" "${js}" html "${html}")
file(WRITE ${OUT}.page "${html}")
file(READ ${OUT}.page hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," arr "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" arr "${arr}")
file(WRITE ${OUT} "/* generated from serve/page.html, page.css, page.js by serve/embed.cmake */\n#include \"serve/page.h\"\nconst char mt_serve_page[] = {\n${arr}0};\nconst size_t mt_serve_page_len = ${bytes};\n")
file(REMOVE ${OUT}.page)
