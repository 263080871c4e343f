#!/usr/bin/env bash
# `make colab-check`: the notebooks with Colab's own package versions (constraints/colab.txt).
#  1. a virtual environment with Colab's ipywidgets, TensorFlow/Keras, NumPy (and a CPU torch of our series),
#     plus the other packages Colab preinstalls that the notebooks use;
#  2. the helper package installed exactly as a notebook's Colab cell does it: `pip install <the package>`,
#     with no constraints, so that its own requirements decide; then check that Colab's versions are unchanged;
#  3. each chapter executed in the quick profile in one framework, alternating Keras and PyTorch from Chapter 1;
#     COLAB_FRAMEWORKS=swapped runs the other half (PyTorch from Chapter 1), =keras or =pytorch one framework
#     everywhere, =both each chapter twice (one kernel per framework, as on Colab).
# Not part of `make test` (it downloads TensorFlow 2.20 once); run it before landing any dependency change.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${COLAB_VENV:-.venv-colab}
PY=${PYTHON:-python3}
test -x "$VENV/bin/python" || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -c constraints/colab.txt ipywidgets tensorflow keras numpy torch \
  ipykernel nbclient nbformat pandas altair transformers tokenizers scikit-learn scipy tqdm requests pyyaml
before=$("$VENV/bin/python" -m pip freeze | grep -iE '^(ipywidgets|tensorflow|keras|numpy|torch|altair|transformers|tokenizers)==' | sort)
"$VENV/bin/python" -m pip uninstall -q -y attention-course 2>/dev/null || true   # a fresh copy of this checkout
"$VENV/bin/python" -m pip install -q .          # what the Colab cell does (from this checkout instead of GitHub)
after=$("$VENV/bin/python" -m pip freeze | grep -iE '^(ipywidgets|tensorflow|keras|numpy|torch|altair|transformers|tokenizers)==' | sort)
if [ "$before" != "$after" ]; then
  echo "Installing the package changed Colab's own packages:"; diff <(echo "$before") <(echo "$after") || true; exit 1
fi
echo "Colab's packages kept: $(echo $after | tr '\n' ' ')"
status=0
choice=${COLAB_FRAMEWORKS:-alternate}
i=0
for nb in book/[0-9][0-9]-*/*.ipynb; do
  case $choice in
    alternate) fws=$([ $((i % 2)) = 0 ] && echo keras || echo pytorch) ;;
    swapped) fws=$([ $((i % 2)) = 0 ] && echo pytorch || echo keras) ;;
    keras|pytorch) fws=$choice ;;
    both) fws="keras pytorch" ;;
    *) echo "COLAB_FRAMEWORKS is alternate, swapped, keras, pytorch or both, not '$choice'"; exit 2 ;;
  esac
  i=$((i + 1))
  for fw in $fws; do
    COURSE_PROFILE=quick COURSE_FRAMEWORKS=$fw COURSE_PROGRESS=0 "$VENV/bin/python" tools/run_notebook.py "$nb" \
      | sed "s/^/[$fw] /" || status=1
  done
done
exit $status
