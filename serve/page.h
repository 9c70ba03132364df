/* serve/page.h — the web UI's one page: serve/page.html with serve/page.css and serve/page.js
 * put inline, embedded at build time (serve/embed.cmake writes the array into the build folder;
 * nothing generated is committed). Self-contained: no CDN, no other request than the API's.
 */
#ifndef MT_SERVE_PAGE_H
#define MT_SERVE_PAGE_H

#include <stddef.h>

extern const char mt_serve_page[];
extern const size_t mt_serve_page_len;

#endif
