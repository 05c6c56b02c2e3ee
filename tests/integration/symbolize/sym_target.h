/* sym_target.h: what the parts of the symbolizer test program share. */
#ifndef SYM_TARGET_H
#define SYM_TARGET_H

#ifdef __cplusplus
extern "C" {
#endif

enum { SYMT_PLAIN, SYMT_INL, SYMT_CXX, SYMT_LIB, SYMT_NODEBUG, SYMT_NODEBUG_CXX, SYMT_NADDR };

extern volatile int symt_sink;
void symt_record(int slot);
void symt_cxx_call(void);
void *lib_entry(void);          /* sym_lib.c: returns a return address inside itself */
void *nodebug_func(void);       /* sym_nodebug.c */
void *nodebug_cxx_call(void);   /* sym_nodebug_cxx.cpp */

#ifdef __cplusplus
}
#endif

#endif
