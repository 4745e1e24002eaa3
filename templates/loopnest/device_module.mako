<%doc>
  One loop nest as a device module (OpenCL C or CUDA C: codegen.device): the runtime helpers
  compiled for the device, an accessor macro per array (C order), the result record, and the
  kernels in schedule order. Context: header, dialect, key, accessors, out_fields ((field,
  C type) pairs), kernel_qualifier, kernels ((name, parameters, body lines) triples).
</%doc>\
/* ${header}
 * variant: ${dialect}
 * key: ${key}
 * Generated code: edit the kernel, not this file.
 */
<%include file="c_runtime.h.mako"/>

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
% for name, params, body in kernels:

${kernel_qualifier} void ${name}(${(",\n" + " " * (len(kernel_qualifier) + len(name) + 7)).join(params)}) {
% for line in body:
    ${line}
% endfor
}
% endfor
