// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// export.h: TIMINGWHEEL_EXPORT, the mark of the public API.
//
// The library is compiled with hidden visibility (-fvisibility=hidden), so
// that a shared libtimingwheel.so exports only the classes and functions of
// include/timingwheel/ marked TIMINGWHEEL_EXPORT, and keeps lib/ to itself:
// internals cannot clash with another library's symbols, and can change
// without changing the library's ABI. The static library is built the same
// way: linked into a user's shared object, it adds only the public API to
// that object's symbols.
//
// The mark is the same whether the library is static or shared, built or
// used, so a user defines nothing. Apply it to every class with out-of-line
// members or a vtable, and to every free function defined in lib/; plain
// structs and code defined in the headers need none.

#ifndef TIMINGWHEEL_EXPORT_H_
#define TIMINGWHEEL_EXPORT_H_

#if defined(__GNUC__)  // g++ and clang
#define TIMINGWHEEL_EXPORT __attribute__((visibility("default")))
#else
#define TIMINGWHEEL_EXPORT
#endif

#endif  // TIMINGWHEEL_EXPORT_H_
