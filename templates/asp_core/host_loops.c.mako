<%doc>
  Launch sequences of device kernels in C (asp_core.backends.launches), so that no Python runs
  between the launches of a host loop: for each iteration of a sequential loop, each kernel's
  loop-dependent arguments are set and the kernel launched. The drivers' entry points come as
  function pointers (OpenCL's clSetKernelArg and clEnqueueNDRangeKernel from the process's
  OpenCL library, as pyopencl loaded it; CUDA's cuLaunchKernel, or the host emulation's launch
  of the same signature), so nothing links against a driver here. No context.

  Grid kernels take, per grid axis, three int64 arguments: the axis's first value, its step
  and its trip count (threads past the trip count return at once).
</%doc>\
#include <stdint.h>
#include <stddef.h>

/* ---- the axes of a kernel at iteration t of its host loop ---- */

/* Axis a of a kernel at iteration t: its first value is form[0] + form[1] * t, its extent
   form[2] + form[3] * t and its step form[4]; *n its trip count (0 where the extent is not
   positive). */
static void asp_axis_at(const int64_t *form, int64_t t, int64_t *lo, int64_t *st, int64_t *n) {
    const int64_t extent = form[2] + form[3] * t, size = form[4] > 0 ? form[4] : -form[4];
    *lo = form[0] + form[1] * t;
    *st = form[4];
    *n = extent > 0 ? (extent + size - 1) / size : 0;
}

/* ---- blocks ---- */

/* The shape of a block (a CUDA block, an OpenCL work-group) over sizes[0 .. naxes-1] threads,
   within limits: limits[0] threads a block at most, limits[1 .. 3] the device's most along x,
   y, z. Along each axis in turn, the
   smallest power of two that covers its threads, within what the axes before it left: a
   block spans the fastest-varying loop first, and a short x axis (a few columns) leaves its
   threads to y rather than to idle lanes. */
void asp_block_shape(int32_t naxes, const int64_t *sizes, const int64_t *limits,
                     int64_t *block) {
    int64_t left = limits[0];
    for (int32_t a = 0; a < 3; a++) {
        int64_t b = 1;
        if (a < naxes)
            while (b < sizes[a] && 2 * b <= left && 2 * b <= limits[1 + a]) b *= 2;
        block[a] = b;
        left /= b;
    }
}

/* ---- OpenCL ---- */

typedef int32_t (*asp_set_arg_t)(void *kernel, uint32_t index, size_t size, const void *value);
typedef int32_t (*asp_enqueue_t)(void *queue, void *kernel, uint32_t dims, const size_t *offset,
                                 const size_t *global, const size_t *local, uint32_t events,
                                 const void *wait, void *event);

/* Iterations t = 0 .. trips-1 of a loop whose variable is first + t * step. Kernel k has
   naxes[k] grid axes, each of five forms (asp_axis_at, counting the axes of all kernels in
   order); axis a's first value, step and trip count go to arguments base[k] + 3a .. + 2, the
   loop variable to argument host[k]. Its work-groups are shaped by asp_block_shape within
   limits[7k .. 7k + 3], and its work items padded to whole work-groups (those past an axis's
   trip count return at once). A kernel with an empty axis is not enqueued.
   Returns 0, or the first OpenCL error code. */
int32_t asp_opencl_host_loop(asp_set_arg_t set_arg, asp_enqueue_t enqueue, void *queue,
                             const int64_t *limits, int64_t trips, int64_t first, int64_t step,
                             int32_t nkernels, void **kernels, const int32_t *naxes,
                             const int32_t *base, const int32_t *host, const int64_t *forms) {
    for (int64_t t = 0; t < trips; t++) {
        const int64_t value = first + t * step;
        const int64_t *form = forms;
        for (int32_t k = 0; k < nkernels; k++) {
            int64_t sizes[3] = {1, 1, 1}, block[3];
            size_t global[3], local[3];
            int empty = 0;
            int32_t error;
            for (int32_t a = 0; a < naxes[k]; a++, form += 5) {
                int64_t lo, st;
                asp_axis_at(form, t, &lo, &st, &sizes[a]);
                if (sizes[a] == 0) empty = 1;
                if ((error = set_arg(kernels[k], (uint32_t)(base[k] + 3 * a), 8, &lo)) ||
                    (error = set_arg(kernels[k], (uint32_t)(base[k] + 3 * a + 1), 8, &st)) ||
                    (error = set_arg(kernels[k], (uint32_t)(base[k] + 3 * a + 2), 8, &sizes[a])))
                    return error;
            }
            if ((error = set_arg(kernels[k], (uint32_t)host[k], 8, &value)))
                return error;
            if (empty) continue;
            asp_block_shape(naxes[k], sizes, limits + 7 * k, block);
            for (int32_t a = 0; a < 3; a++) {
                local[a] = (size_t)block[a];
                global[a] = (size_t)((sizes[a] + block[a] - 1) / block[a] * block[a]);
            }
            if ((error = enqueue(queue, kernels[k], (uint32_t)naxes[k], NULL, global, local, 0,
                                 NULL, NULL)))
                return error;
        }
    }
    return 0;
}

/* ---- CUDA ---- */

/* cuLaunchKernel's signature (CUresult is an int-sized enum, 0 on success). */
typedef int32_t (*asp_cu_launch_t)(void *function, uint32_t gx, uint32_t gy, uint32_t gz,
                                   uint32_t bx, uint32_t by, uint32_t bz, uint32_t shared,
                                   void *stream, void **params, void **extra);

/* Launch `function` over sizes[0 .. naxes-1] threads (naxes 0: one thread) in blocks of
   asp_block_shape, or of group threads along x where group > 0 (sizes[0] a multiple of it).
   Where an axis needs more blocks than the device's most (limits[4 .. 6] along x, y, z), the
   launch is split along it: a grid kernel (base >= 0: axis a's first value, step and trip
   count in params[base + 3a .. + 2], each an int64) is launched once per chunk of the axis,
   its first value and trip count those of the chunk, and the arguments are restored after.
   Returns 0, or the first launch's error code (a split needed without base: -1). */
int32_t asp_cuda_launch(asp_cu_launch_t launch, void *function, void *stream,
                        const int64_t *limits, int32_t naxes, const int64_t *sizes,
                        int32_t group, int32_t base, void **params) {
    int64_t block[3] = {1, 1, 1}, n[3] = {1, 1, 1}, chunk[3], saved[3][2];
    for (int32_t a = 0; a < naxes; a++) {
        if (sizes[a] <= 0) return 0;
        n[a] = sizes[a];
    }
    if (group > 0) block[0] = group;
    else asp_block_shape(naxes, sizes, limits, block);
    for (int32_t a = 0; a < 3; a++) {
        chunk[a] = limits[4 + a] * block[a];     /* the most threads one launch runs along a */
        if (n[a] > chunk[a] && (base < 0 || a >= naxes)) return -1;
    }
    for (int32_t a = 0; a < naxes && base >= 0; a++) {
        saved[a][0] = *(int64_t *)params[base + 3 * a];
        saved[a][1] = *(int64_t *)params[base + 3 * a + 2];
    }
    int32_t error = 0;
    for (int64_t z = 0; z < n[2] && !error; z += chunk[2])
        for (int64_t y = 0; y < n[1] && !error; y += chunk[1])
            for (int64_t x = 0; x < n[0] && !error; x += chunk[0]) {
                const int64_t at[3] = {x, y, z};
                int64_t g[3];
                for (int32_t a = 0; a < 3; a++) {
                    const int64_t here = n[a] - at[a] < chunk[a] ? n[a] - at[a] : chunk[a];
                    g[a] = (here + block[a] - 1) / block[a];
                    if (a < naxes && base >= 0) {
                        const int64_t step = *(int64_t *)params[base + 3 * a + 1];
                        *(int64_t *)params[base + 3 * a] = saved[a][0] + at[a] * step;
                        *(int64_t *)params[base + 3 * a + 2] = here;
                    }
                }
                error = launch(function, (uint32_t)g[0], (uint32_t)g[1], (uint32_t)g[2],
                               (uint32_t)block[0], (uint32_t)block[1], (uint32_t)block[2],
                               0, stream, params, NULL);
            }
    for (int32_t a = 0; a < naxes && base >= 0; a++) {
        *(int64_t *)params[base + 3 * a] = saved[a][0];
        *(int64_t *)params[base + 3 * a + 2] = saved[a][1];
    }
    return error;
}

/* A host loop of CUDA launches: iterations as asp_opencl_host_loop's, kernel k's arguments
   params[k] (pointers to their values, as cuLaunchKernel takes them); its axes' first values,
   steps and trip counts are written to params[k][base[k] + 3a .. + 2] and the loop variable to
   params[k][host[k]] (each an int64) before it is launched (asp_cuda_launch). */
int32_t asp_cuda_host_loop(asp_cu_launch_t launch, void *stream, const int64_t *limits,
                           int64_t trips, int64_t first, int64_t step, int32_t nkernels,
                           void **functions, void ***params, const int32_t *naxes,
                           const int32_t *base, const int32_t *host, const int64_t *forms) {
    for (int64_t t = 0; t < trips; t++) {
        const int64_t *form = forms;
        for (int32_t k = 0; k < nkernels; k++) {
            int64_t sizes[3] = {1, 1, 1};
            for (int32_t a = 0; a < naxes[k]; a++, form += 5) {
                void **axis = params[k] + base[k] + 3 * a;
                asp_axis_at(form, t, (int64_t *)axis[0], (int64_t *)axis[1], &sizes[a]);
                *(int64_t *)axis[2] = sizes[a];
            }
            *(int64_t *)params[k][host[k]] = first + t * step;
            const int32_t error = asp_cuda_launch(launch, functions[k], stream, limits,
                                                  naxes[k], sizes, 0, base[k], params[k]);
            if (error) return error;
        }
    }
    return 0;
}
