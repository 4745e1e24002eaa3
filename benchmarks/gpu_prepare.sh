#!/usr/bin/env bash
# Prepare .gpu/ (ignored by git) for benchmarks/gpu_checks.sh on a GPU machine that has Python
# and CUDA but neither network access nor this project's packages (a lent machine of this
# workplace: Python 3.12, numpy, pytest, hypothesis and pytest-xdist there). Run here, with
# network access, gcc and the CUDA headers:
#     bash benchmarks/gpu_prepare.sh [PYVER]        (default 3.12)
# It leaves .gpu/site (the packages, unpacked wheels for that Python), .gpu/_coldgate for it,
# and .gpu/pycuda.tar.gz (pycuda's sources, which gpu_checks.sh builds there if the prepared
# pycuda does not load).
#
# pycuda publishes sources only. It is built here against that Python's headers (taken from
# Ubuntu's libpython<ver>-dev package: this machine has no such Python), linked against a stub
# libcuda.so.1 (the driver library is the GPU machine's own), named with that Python's
# extension suffix through setuptools' SETUPTOOLS_EXT_SUFFIX.
set -euo pipefail
cd "$(dirname "$0")/.."
VER=${1:-3.12}
PATCH=${PATCH:-3.12.3-1}     # Ubuntu 24.04's libpython3.12-dev (the lent machines' Python)
CUDA=${CUDA:-/usr/local/cuda}
WORK=$(mktemp -d)
SUFFIX=".cpython-${VER/./}-x86_64-linux-gnu.so"
PLATFORMS="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"

curl -sfo "$WORK/dev.deb" \
    "http://archive.ubuntu.com/ubuntu/pool/main/p/python$VER/libpython$VER-dev_${PATCH}_amd64.deb"
dpkg -x "$WORK/dev.deb" "$WORK/py"
INCLUDES="-I$WORK/py/usr/include/python$VER -I$WORK/py/usr/include"

rm -rf .gpu && mkdir -p .gpu/site "$WORK/wheels"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$VER" \
    --implementation cp $PLATFORMS -d "$WORK/wheels" \
    codepy cffi mako markupsafe pytools platformdirs pycparser siphash24 pyopencl tqdm click \
    hypothesis attrs sortedcontainers pytest-timeout   # (the last four: the tests)
python3 -m pip wheel -q --no-deps -w "$WORK/wheels" cgen            # (sources only)
for wheel in "$WORK"/wheels/*.whl; do unzip -q -o "$wheel" -d .gpu/site; done

python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q numpy pytools platformdirs mako setuptools wheel
"$WORK/venv/bin/pip" download -q --no-deps --no-binary=:all: --no-build-isolation -d "$WORK" pycuda
cp "$WORK"/pycuda-*.tar.gz .gpu/pycuda.tar.gz
mkdir "$WORK/src" "$WORK/stub"
tar xzf .gpu/pycuda.tar.gz -C "$WORK/src" --strip-components=1
echo > "$WORK/stub/empty.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$WORK/stub/libcuda.so" "$WORK/stub/empty.c"
(
    cd "$WORK/src"
    "$WORK/venv/bin/python" configure.py --cuda-root="$CUDA" --cudadrv-lib-dir="$WORK/stub" \
        --no-cuda-enable-curand
    CFLAGS="$INCLUDES" CPPFLAGS="$INCLUDES" SETUPTOOLS_EXT_SUFFIX="$SUFFIX" \
        "$WORK/venv/bin/python" setup.py build_ext -j 2 >"$WORK/build.log" 2>&1
    # The linker drops the stub (no symbol of it is used: --as-needed), and with it the
    # driver library from the module's needs: _driver is linked again with --no-as-needed.
    link=$(grep "^g++ -shared" "$WORK/build.log" | grep "_driver$SUFFIX" | tail -1 |
           sed 's/^g++ -shared/g++ -shared -Wl,--no-as-needed/')
    eval "$link"
    readelf -d build/lib*/pycuda/_driver"$SUFFIX" | grep -q 'libcuda.so.1'
    cp -r pycuda "$OLDPWD/.gpu/site/"                  # its Python modules,
    cp build/lib*/pycuda/*.so "$OLDPWD/.gpu/site/pycuda/"   # and the two built here
)
gcc -O2 -shared -fPIC $INCLUDES -o ".gpu/_coldgate$SUFFIX" specializers/loopnest/_coldgate.c
rm -rf "$WORK"
du -sh .gpu
