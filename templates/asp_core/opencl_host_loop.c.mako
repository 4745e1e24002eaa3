<%doc>
  A host loop of OpenCL launches in C (asp_core.backends.opencl.host_loop): for each iteration
  of a sequential loop, each kernel's loop-dependent arguments are set and the kernel enqueued,
  with no Python between launches. The OpenCL entry points come as function pointers (the
  process's own OpenCL library, as pyopencl loaded it), so nothing links against OpenCL here.
  No context.
</%doc>\
#include <stdint.h>
#include <stddef.h>

typedef int32_t (*asp_set_arg_t)(void *kernel, uint32_t index, size_t size, const void *value);
typedef int32_t (*asp_enqueue_t)(void *queue, void *kernel, uint32_t dims, const size_t *offset,
                                 const size_t *global, const size_t *local, uint32_t events,
                                 const void *wait, void *event);

/* Iterations t = 0 .. trips-1 of a loop whose variable is first + t * step. Kernel k has
   naxes[k] grid axes; axis a's first value is forms[5i] + forms[5i+1] * t, its extent
   forms[5i+2] + forms[5i+3] * t and its step forms[5i+4] (i counting the axes of all kernels
   in order); its first value, step and trip count go to arguments base[k] + 3a .. + 2, and
   the loop variable to argument host[k]. A kernel with an empty axis is not enqueued.
   Returns 0, or the first OpenCL error code. */
int32_t asp_opencl_host_loop(asp_set_arg_t set_arg, asp_enqueue_t enqueue, void *queue,
                             int64_t trips, int64_t first, int64_t step, int32_t nkernels,
                             void **kernels, const int32_t *naxes, const int32_t *base,
                             const int32_t *host, const int64_t *forms) {
    for (int64_t t = 0; t < trips; t++) {
        const int64_t value = first + t * step;
        const int64_t *form = forms;
        for (int32_t k = 0; k < nkernels; k++) {
            size_t global[3] = {1, 1, 1};
            int empty = 0;
            int32_t error;
            for (int32_t a = 0; a < naxes[k]; a++, form += 5) {
                const int64_t lo = form[0] + form[1] * t, extent = form[2] + form[3] * t;
                const int64_t st = form[4], size = st > 0 ? st : -st;
                const int64_t n = extent > 0 ? (extent + size - 1) / size : 0;
                if (n == 0) empty = 1;
                global[a] = (size_t)n;
                if ((error = set_arg(kernels[k], (uint32_t)(base[k] + 3 * a), 8, &lo)) ||
                    (error = set_arg(kernels[k], (uint32_t)(base[k] + 3 * a + 1), 8, &st)) ||
                    (error = set_arg(kernels[k], (uint32_t)(base[k] + 3 * a + 2), 8, &n)))
                    return error;
            }
            if ((error = set_arg(kernels[k], (uint32_t)host[k], 8, &value)))
                return error;
            if (!empty && (error = enqueue(queue, kernels[k], (uint32_t)naxes[k], NULL, global,
                                           NULL, 0, NULL, NULL)))
                return error;
        }
    }
    return 0;
}
