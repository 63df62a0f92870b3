#!/bin/sh
# The GPU lane: run on the lent H200 (see ../shared/gpu/README.md and the README's "GPU lane" section).
#   sh scripts/gpu_lane.sh OUTDIR [what...]     what: doctor tests notebooks scripts (default: all)
# Installs the carried wheels (.whl: numpy 2.4 — the image's numpy 2.5 breaks numba-cuda 0.30.4 — plus
# nbval, greenlet, ...), then runs, on the GPU backend: the doctor, the unit tests, every notebook with
# nbval, and every scripts/gpu/*.py (each writes its JSON records into OUTDIR/measurements). Everything
# it writes is packed into OUTDIR/lane.tgz (the device tool returns at most 8 files).
set -u
OUTDIR=${1:?usage: gpu_lane.sh OUTDIR [doctor tests notebooks scripts]}
shift
WHAT=${*:-doctor tests notebooks scripts}
LANE="$OUTDIR/lane"
mkdir -p "$LANE/measurements"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed: run 'bash ../shared/gpu/fetch-wheels.sh greenlet pytest-timeout' here and carry .whl"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 COURSE_BACKEND=gpu
status=0
for step in $WHAT; do
  echo "=== $step"
  case $step in
    doctor)
      nvidia-smi > "$LANE/nvidia-smi.txt" 2>&1
      python3 -m course doctor 2>&1 | tee "$LANE/doctor.txt" || status=1 ;;
    tests)
      python3 -m pytest tests -q -p no:cacheprovider -x --timeout 300 -o addopts="" \
        --junitxml "$LANE/tests.xml" > "$LANE/tests.log" 2>&1 || status=1
      tail -15 "$LANE/tests.log" ;;
    notebooks)
      python3 -m pytest --nbval-lax notebooks solutions -q -p no:cacheprovider -o addopts="" \
        --junitxml "$LANE/notebooks.xml" > "$LANE/notebooks.log" 2>&1 || status=1
      tail -15 "$LANE/notebooks.log" ;;
    scripts)
      for s in scripts/gpu/*.py; do
        [ -f "$s" ] || continue
        echo "--- $s"
        timeout 400 python3 "$s" --out "$LANE/measurements" > "$LANE/$(basename "$s" .py).log" 2>&1 || { status=1; echo "FAILED: $s"; }
        tail -25 "$LANE/$(basename "$s" .py).log"
      done ;;
    *) python3 "$step" --out "$LANE/measurements" 2>&1 | tee "$LANE/$(basename "$step" .py).log" || status=1 ;;
  esac
done
tar czf "$OUTDIR/lane.tgz" -C "$OUTDIR" lane
exit $status
