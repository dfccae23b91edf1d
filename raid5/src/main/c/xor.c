/*
 * Native XOR passes for io.stripestack.raid5.NativeXor: dst ^= src0 ^ ... ^ srcN-1 over 64-bit words, the same
 * fixed-arity passes as the Java routines in Xor.java, compiled twice: for the x86-64 baseline (SSE2 vectors)
 * and for AVX2. Java's JIT does not vectorize loops over native memory, which is where the array's buffers live;
 * a C compiler does. Which variant (or Java routine) is used is decided by measurement at start-up, as the
 * kernel's xor.ko decides between its routines.
 *
 * Built by raid5/pom.xml (profile native-xor) with gcc. Written against the JNI calling convention without
 * jni.h, so no JDK headers are needed: on x86-64 Linux a JNI function is a plain C function whose first two
 * arguments are the JNIEnv and the class, jlong is int64_t and jint is int32_t. Lengths are in bytes, a
 * multiple of 8; addresses are those of direct buffers, checked against their limits by the Java caller.
 * Destination and sources may overlap only if identical (no restrict qualifiers: the compiler checks at run
 * time and keeps a scalar path).
 */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))
#define AVX2 __attribute__((target("avx2")))

typedef uint64_t word;

#define PASSES(ATTR, SUFFIX)                                                                                     \
    ATTR static void pass1_##SUFFIX(word *d, const word *a, size_t n) {                                          \
        for (size_t i = 0; i < n; i++) d[i] ^= a[i];                                                              \
    }                                                                                                             \
    ATTR static void pass2_##SUFFIX(word *d, const word *a, const word *b, size_t n) {                           \
        for (size_t i = 0; i < n; i++) d[i] ^= a[i] ^ b[i];                                                       \
    }                                                                                                             \
    ATTR static void pass3_##SUFFIX(word *d, const word *a, const word *b, const word *c, size_t n) {            \
        for (size_t i = 0; i < n; i++) d[i] ^= a[i] ^ b[i] ^ c[i];                                                \
    }                                                                                                             \
    ATTR static void pass4_##SUFFIX(word *d, const word *a, const word *b, const word *c, const word *e,         \
                                    size_t n) {                                                                   \
        for (size_t i = 0; i < n; i++) d[i] ^= a[i] ^ b[i] ^ c[i] ^ e[i];                                         \
    }

PASSES(, base)
PASSES(AVX2, avx2)

#define W(x) ((word *) (intptr_t) (x))
#define R(x) ((const word *) (intptr_t) (x))
#define WORDS(len) ((size_t) (len) / 8)

EXPORT int32_t Java_io_stripestack_raid5_NativeXor_hasAvx2(void *env, void *cls) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}

EXPORT void Java_io_stripestack_raid5_NativeXor_pass1(void *env, void *cls, int32_t avx2, int64_t d, int64_t a,
                                                      int32_t len) {
    if (avx2) pass1_avx2(W(d), R(a), WORDS(len));
    else pass1_base(W(d), R(a), WORDS(len));
}

EXPORT void Java_io_stripestack_raid5_NativeXor_pass2(void *env, void *cls, int32_t avx2, int64_t d, int64_t a,
                                                      int64_t b, int32_t len) {
    if (avx2) pass2_avx2(W(d), R(a), R(b), WORDS(len));
    else pass2_base(W(d), R(a), R(b), WORDS(len));
}

EXPORT void Java_io_stripestack_raid5_NativeXor_pass3(void *env, void *cls, int32_t avx2, int64_t d, int64_t a,
                                                      int64_t b, int64_t c, int32_t len) {
    if (avx2) pass3_avx2(W(d), R(a), R(b), R(c), WORDS(len));
    else pass3_base(W(d), R(a), R(b), R(c), WORDS(len));
}

EXPORT void Java_io_stripestack_raid5_NativeXor_pass4(void *env, void *cls, int32_t avx2, int64_t d, int64_t a,
                                                      int64_t b, int64_t c, int64_t e, int32_t len) {
    if (avx2) pass4_avx2(W(d), R(a), R(b), R(c), R(e), WORDS(len));
    else pass4_base(W(d), R(a), R(b), R(c), R(e), WORDS(len));
}
