<%doc>
  One loop nest as a device module (OpenCL C or CUDA C: codegen.device): the runtime helpers
  compiled for the device, an accessor macro per array (C order), the result record, and the
  kernels in schedule order. Context: header, dialect, key, accessors, out_fields ((field,
  C type) pairs), kernels ((head, parameters, body lines) triples; head: the declaration up to
  the parameters, qualifiers and attributes included: Dialect.kernel_head).
</%doc>\
/* ${header}
 * variant: ${dialect}
 * key: ${key}
 * Generated code: edit the kernel, not this file.
 */
<%include file="c_runtime.h.mako"/>
/* ---- the nest ---- */

% for line in accessors:
${line}
% endfor

typedef struct {
% for name, ctype in out_fields:
    ${ctype} ${name};
% endfor
% if not out_fields:
    int32_t unused;
% endif
} asp_out_t;
% for head, params, body in kernels:

${head}(${(",\n" + " " * (len(head.split("\n")[-1]) + 1)).join(params)}) {
% for line in body:
    ${line}
% endfor
}
% endfor
