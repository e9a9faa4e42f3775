import inspect
import subprocess
import sys
import warnings

import torch

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext

own = subprocess.run([sys.executable, "-c", "import inspect, torch.cuda.green_contexts as m; "
                      "print(inspect.signature(m.GreenContext.create), [n for n in dir(m.GreenContext) if not n.startswith('_')])"],
                     capture_output=True, text=True)
print("torch", torch.__version__, "own module: create", own.stdout.strip() or own.stderr.strip()[-300:])
print("driver", tgc.driver_version(), "device", torch.cuda.get_device_name(0))
print("GreenContext(num_sms=17).sm_count =", GreenContext(num_sms=17).sm_count)
for query in (tgc.get_num_locality_domains, tgc.is_localization_supported):
    for bad in (99, "x", -1, 1.5):
        try:
            print(query.__name__, repr(bad), "-> no error:", query(bad))
        except Exception as error:
            print(query.__name__, repr(bad), "->", type(error).__name__ + ":", error)
print("get_num_locality_domains(0) =", tgc.get_num_locality_domains(0), "; is_localization_supported(0) =",
      tgc.is_localization_supported(0))
tgc.install()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ctx = torch.cuda.green_contexts.GreenContext.create(16, 0)
print("after install(): create(16, 0).sm_count =", ctx.sm_count, "; warnings:", [f"{w.category.__name__}: {w.message}" for w in caught])
print("signature reported:", inspect.signature(torch.cuda.green_contexts.GreenContext.create))
