<%doc>
  One loop nest as a C module (serial C or OpenMP C): the runtime helpers, an accessor macro
  per array, and the entry function returning a struct with the error record and the final
  values of the scalars the kernel reads afterwards. Context: header, variant, key, entry,
  out_type, out_fields, params, accessors, prologue, body, epilogue (lists of lines, the body
  already indented below the function's level), functions (lines of functions the body calls:
  an OpenMP region's blocks, ``codegen.openmp._outline``), stops (whether the body jumps to asp_stop
  after an error), simd_functions ((C function, C type, arity) to wrap with SIMD clones).
</%doc>\
/* ${header}
 * variant: ${variant}
 * key: ${key}
 * Generated code: edit the kernel, not this file.
 */
<%include file="c_runtime.h.mako"/>
% if simd_functions:

/* C library functions called from vectorized loops, through wrappers with SIMD clones: each
   lane calls the function itself, so the results are the same bits as the scalar call's.
   256-bit vectors where there is AVX (4 doubles, 8 floats; GCC's widest clones run several
   times slower), 128-bit ones otherwise. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* GCC on x86-64: the clones are written here, under the names of the x86-64 vector function
   ABI (_ZGV<isa>N<lanes><v per argument>_<function>, with the isa letter GCC picks for the
   target: e AVX-512, d AVX2, c AVX, b SSE2), and the loops see only a declaration. The clones
   GCC makes of a scalar body go through memory (4 scalar stores read back by one vector load,
   a store-forwarding stall: 9% of black_scholes' time); these keep the lanes in registers.
   The scalar function (the loops' remainders) is given the wrapper's name by an assembler
   alias, unseen by GCC: seeing the body, GCC would inline it and not use the clones. */
#if defined(__AVX__)
#define ASP_VBYTES 32
#define ASP_LANES_double 4
#define ASP_LANES_float 8
#else
#define ASP_VBYTES 16
#define ASP_LANES_double 2
#define ASP_LANES_float 4
#endif
#if defined(__AVX512F__)
#define ASP_ISA "e"
#elif defined(__AVX2__)
#define ASP_ISA "d"
#elif defined(__AVX__)
#define ASP_ISA "c"
#else
#define ASP_ISA "b"
#endif
#define ASP_STRING_(x) #x
#define ASP_STRING(x) ASP_STRING_(x)
typedef double asp_vdouble __attribute__((vector_size(ASP_VBYTES)));
typedef float asp_vfloat __attribute__((vector_size(ASP_VBYTES)));
% for name, ctype, arity in simd_functions:
<%
    scalars = ", ".join(f"{ctype} x{k}" for k in range(arity))
    vectors = ", ".join(f"asp_v{ctype} x{k}" for k in range(arity))
    names = ", ".join(f"x{k}" for k in range(arity))
    def lanes(count):
        return ", ".join(name + "(" + ", ".join(f"x{k}[{lane}]" for k in range(arity)) + ")"
                         for lane in range(count))
%>
__attribute__((visibility("hidden"))) ${ctype} asp_scalar_${name}(${scalars}) { return ${name}(${names}); }
__asm__(".globl asp_simd_${name}\n.hidden asp_simd_${name}\n.set asp_simd_${name}, asp_scalar_${name}");
__attribute__((visibility("hidden"))) asp_v${ctype} asp_vector_${name}(${vectors})
    __asm__("_ZGV" ASP_ISA "N" ASP_STRING(ASP_LANES_${ctype}) "${"v" * arity}_asp_simd_${name}");
asp_v${ctype} asp_vector_${name}(${vectors}) {
#if ASP_LANES_${ctype} == ${4 if ctype == "double" else 8}
    return (asp_v${ctype}){${lanes(4 if ctype == "double" else 8)}};
#else
    return (asp_v${ctype}){${lanes(2 if ctype == "double" else 4)}};
#endif
}
#pragma omp declare simd simdlen(ASP_LANES_${ctype}) notinbranch
__attribute__((visibility("hidden"), const, nothrow, leaf)) ${ctype} asp_simd_${name}(${scalars});
% endfor
#else
% for name, ctype, arity in simd_functions:
#pragma omp declare simd simdlen(${4 if ctype == "double" else 8})
__attribute__((noinline)) static ${ctype} asp_simd_${name}(${", ".join(f"{ctype} x{k}" for k in range(arity))}) { return ${name}(${", ".join(f"x{k}" for k in range(arity))}); }
% endfor
#endif
% endif

% for line in accessors:
${line}
% endfor
% if functions:

% for line in functions:
${line}
% endfor
% endif

typedef struct {
    asp_error err;
% for field in out_fields:
    ${field};
% endfor
} ${out_type};

${out_type} ${entry}(${(",\n" + " " * (len(out_type) + len(entry) + 2)).join(params)}) {
    ${out_type} asp_out;
    memset(&asp_out, 0, sizeof asp_out);
    asp_error *asp_err = &asp_out.err;
% for line in prologue:
    ${line}
% endfor
% for line in body:
    ${line}
% endfor
% if stops:
asp_stop:
% endif
% for line in epilogue:
    ${line}
% endfor
    return asp_out;
}
