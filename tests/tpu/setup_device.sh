# Source this on a TPU machine from the repository root: installs what the machine lacks
# (optree from .whl-tpu/, the CPU PJRT plugin from .tpu-extra/ when carried) under /tmp/site
# and puts revax (this checkout) first on PYTHONPATH. See tests/tpu/README.md.
PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps --no-compile \
  --no-cache-dir --upgrade --target /tmp/site .whl-tpu/*.whl || return 1
if [ -f .tpu-extra/cpu_plugin_meta.zip ]; then
  python3 - <<'PY'
import lzma, shutil, zipfile
zipfile.ZipFile(".tpu-extra/cpu_plugin_meta.zip").extractall("/tmp/site")
with lzma.open(".tpu-extra/xla_cpu_pjrt.so.xz") as src, \
     open("/tmp/site/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so", "wb") as dst:
  shutil.copyfileobj(src, dst)
PY
fi
export PYTHONPATH=$PWD:$PYTHONPATH:/tmp/site
