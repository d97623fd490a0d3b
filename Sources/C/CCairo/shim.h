#ifndef EVIDENCE_CCAIRO_SHIM_H
#define EVIDENCE_CCAIRO_SHIM_H
#include <cairo/cairo.h>
#include <cairo/cairo-pdf.h>
#endif
