<%doc>
  One loop nest as a C module (serial C or OpenMP C): the runtime helpers, an accessor macro
  per array, and the entry function returning a struct with the error record and the final
  values of the scalars the kernel reads afterwards. Context: header, variant, key, entry,
  out_type, out_fields, params, accessors, prologue, body, epilogue (lists of lines, the body
  already indented below the function's level), stops (whether the body jumps to asp_stop
  after an error), simd_functions ((C function, C type, arity) to wrap with SIMD clones).
</%doc>\
/* ${header}
 * variant: ${variant}
 * key: ${key}
 * Generated code: edit the kernel, not this file.
 */
<%include file="c_runtime.h.mako"/>
% for name, ctype, arity in simd_functions:
% if loop.first:

/* C library functions with SIMD clones: each lane calls the function itself. 256-bit clones
   (simdlen 4 doubles, 8 floats): GCC's widest ones run several times slower. */
% endif
#pragma omp declare simd simdlen(${4 if ctype == "double" else 8})
__attribute__((noinline)) static ${ctype} asp_simd_${name}(${", ".join(f"{ctype} x{k}" for k in range(arity))}) { return ${name}(${", ".join(f"x{k}" for k in range(arity))}); }
% endfor

% for line in accessors:
${line}
% endfor

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
