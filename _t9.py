import copy, traceback, warnings
warnings.simplefilter("ignore")
from tests.specializers.loopnest.generators import load_kernel, make_arguments
src = open("/tmp/src.py").read()
Kernel, path = load_kernel(src)
args = make_arguments()
k = Kernel(backend="python-reversed", strict=True)
a = copy.deepcopy(args)
try:
    k.kernel(*a)
except Exception:
    traceback.print_exc()
st = k._asp_current
for r in st.runners:
    if r.last_plan:
        print(r.last_plan.schedule.dump())
