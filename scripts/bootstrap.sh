#!/usr/bin/env bash
# Create (or verify) the project's virtualenv for one ROS 2 distro: ROS 2 wheels, torch (CPU), the
# Python dependencies, a locally generated tf2_msgs and this package (editable). When the launch
# system's wheels lie beside the clone (../shared/ros/launch: launch, launch_ros, the `ros2` CLI,
# see its README) they are installed too and composition_interfaces is generated from its source,
# so that the tests run the launch files the way users do. Idempotent: a stamp holding the hash of
# every input makes a re-run with nothing changed take about a second. The Jazzy venv also gets the
# optional Ray extra (requirements/ray.txt: `tt-depth-batch --ray`), the LiteRT converter and
# interpreter (requirements/litert.txt: `tt-depth export --format litert`) and the test-only Rerun
# viewer (requirements/viewer.txt: it opens batch outputs), whose tests run on Jazzy only.
#
#   scripts/bootstrap.sh [jazzy|kilted]      -> .venv (jazzy, default) or .venv-kilted
#   TT_DEPTH_ROS_SHARED=/path/to/shared      -> where to look for <shared>/ros/launch (default ../shared)
set -euo pipefail
start=$(date +%s.%N)
distro="${1:-jazzy}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "$distro" in
  jazzy) venv="$root/.venv" ;;
  kilted) venv="$root/.venv-kilted" ;;
  *) echo "bootstrap: unknown distro '$distro' (use jazzy or kilted)" >&2; exit 2 ;;
esac
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null || py=python3
inputs=(scripts/bootstrap.sh requirements/uv.txt requirements/common.txt "requirements/$distro.txt"
        "requirements/tf2_build_$distro.txt" scripts/tf2_msgs/msg/TFMessage.msg
        scripts/tf2_msgs/CMakeLists.txt scripts/tf2_msgs/package.xml setup.py setup.cfg package.xml)
# The launch wheels are pure Python, built from the Jazzy branches; they also run on Kilted's rclpy.
launch_dir="${TT_DEPTH_ROS_SHARED:-$root/../shared}/ros/launch"
check_imports="import rclpy, torch, tf2_msgs.msg"
extras=()
if [[ "$distro" == jazzy ]]; then
  extras=(-r "$root/requirements/ray.txt" -r "$root/requirements/litert.txt"
          -r "$root/requirements/viewer.txt")
  inputs+=(requirements/ray.txt requirements/litert.txt requirements/viewer.txt)
  check_imports+=", ray, ai_edge_litert, rerun"
fi
if [[ -d "$launch_dir/wheels" ]]; then
  launch_dir="$(cd "$launch_dir" && pwd)"
  inputs+=(requirements/launch.txt)
  while IFS= read -r f; do inputs+=("$f"); done < <(find "$launch_dir/wheels" \
    "$launch_dir/src/composition_interfaces" -type f | sort)
  check_imports+=", launch_ros.actions, composition_interfaces.srv, ros2cli"
else
  launch_dir=""
fi
stamp_want=$(cd "$root" && cat "${inputs[@]}" | sha256sum | cut -c1-16)
stamp_file="$venv/.tt_depth_ros_stamp"

elapsed() { python3 -c "import time;print(f'{time.time()-$start:.1f}')"; }

if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_want" ]] \
   && "$venv/bin/python" -c "$check_imports" 2>/dev/null; then
  echo "bootstrap[$distro]: environment up to date ($venv), checked in $(elapsed) s"
  exit 0
fi

echo "bootstrap[$distro]: building $venv with $($py --version)"
"$py" -m venv "$venv"
# The packages go in with uv (requirements/uv.txt): the same set pip would install, resolved and
# unpacked in parallel, in a fraction of pip's time (the most of this script's). It reads the
# sources pip is configured with on this machine (indexes, find-links, constraints, CA bundle:
# `pip config list`) and weighs every index alike, as pip does. uv does not byte-compile (what
# pip's --no-compile was for): Python compiles what is imported on first import.
# pip warns once per package about the machine's absent local index folders: filter only those.
pip_quiet() { "$venv/bin/python" -m pip install --disable-pip-version-check -q "$@" 2>&1 \
                | { grep -v "is ignored: it is neither a file nor a directory" || true; }; }
pip_quiet -r "$root/requirements/uv.txt"
uv_sources=()
while IFS= read -r arg; do uv_sources+=("$arg"); done < <("$venv/bin/python" - <<'PY'
import ast
import subprocess
import sys
flag = {'index-url': '--index-url', 'extra-index-url': '--extra-index-url',
        'find-links': '--find-links', 'constraint': '--constraint', 'cert': '--cert'}
out = subprocess.run([sys.executable, '-m', 'pip', 'config', 'list'], capture_output=True,
                     text=True, check=True).stdout
seen = set()
for line in out.splitlines():
    key, _, value = line.partition('=')
    name = key.rsplit('.', 1)[-1]
    if name not in flag or not value:
        continue
    for item in ast.literal_eval(value).split():
        if (name, item) not in seen:
            seen.add((name, item))
            print(flag[name])
            print(item)
PY
)
pipi() { "$venv/bin/uv" pip install --python "$venv/bin/python" -q \
           --index-strategy unsafe-best-match "${uv_sources[@]}" "$@"; }
pipi -r "$root/requirements/common.txt" -r "$root/requirements/$distro.txt" "${extras[@]}"
echo "bootstrap[$distro]: python packages installed ($(elapsed) s)"

# Interface packages without a wheel (tf2_msgs; composition_interfaces for launch_ros) are generated
# with the rosidl build wheels (docs/ros.md §5) and installed into the venv.
fixed_cmake_paths=""
generate_interfaces() {  # <package name> <source dir>
  local name="$1" src="$2" build="$venv/.build/$1"
  "$venv/bin/python" -c "import $name" 2>/dev/null && return 0
  if [[ -z "$fixed_cmake_paths" ]]; then
    pipi -r "$root/requirements/tf2_build_$distro.txt"
    local pyinc npinc old
    pyinc=$("$venv/bin/python" -c "import sysconfig;print(sysconfig.get_paths()['include'])")
    npinc=$("$venv/bin/python" -c "import numpy;print(numpy.get_include())")
    # The message wheels' CMake exports hard-code the wheel build container's Python prefix.
    old=$(grep -rhoE '[^;" ]+/python/cp311-cp311' "$venv/share" --include='*.cmake' | sort -u | head -n1 || true)
    if [[ -n "$old" ]]; then
      grep -rl "$old/" "$venv/share" --include='*.cmake' | xargs -r sed -i \
        -e "s#$old/include/python3.11#$pyinc#g" \
        -e "s#$old/lib/python3.11/site-packages/numpy/_core/include#$npinc#g"
    fi
    fixed_cmake_paths=1
  fi
  rm -rf "$build"; mkdir -p "$build"
  # Python needs the C type supports only: a copy of the package whose CMakeLists drops the C++
  # generators (rosidl_generator_cpp, rosidl_typesupport_*_cpp) after finding them
  cp -r "$src" "$build/src"
  src="$build/src"
  sed -i 's/^find_package(rosidl_default_generators REQUIRED)$/&\nlist(FILTER AMENT_EXTENSIONS_rosidl_generate_idl_interfaces EXCLUDE REGEX "_cpp:")/' \
    "$src/CMakeLists.txt"
  grep -q '^list(FILTER AMENT_EXTENSIONS_rosidl_generate_idl_interfaces' "$src/CMakeLists.txt" \
    || { echo "bootstrap: $name: no find_package(rosidl_default_generators REQUIRED) line" >&2; exit 1; }
  AMENT_PREFIX_PATH="$venv" cmake -S "$src" -B "$build/cmake" -DCMAKE_PREFIX_PATH="$venv" \
    -DCMAKE_INSTALL_PREFIX="$venv" -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF >"$build.log" 2>&1 \
    || { tail -n 40 "$build.log"; echo "bootstrap: $name configure failed (log: $build.log)" >&2; exit 1; }
  AMENT_PREFIX_PATH="$venv" cmake --build "$build/cmake" -j2 >>"$build.log" 2>&1 \
    && cmake --install "$build/cmake" >>"$build.log" 2>&1 \
    || { tail -n 40 "$build.log"; echo "bootstrap: $name build failed (log: $build.log)" >&2; exit 1; }
  "$venv/bin/python" -c "import $name" \
    || { echo "bootstrap: $name built but does not import" >&2; exit 1; }
  echo "bootstrap[$distro]: $name generated ($(elapsed) s)"
}

generate_interfaces tf2_msgs.msg "$root/scripts/tf2_msgs"

if [[ -n "$launch_dir" ]]; then
  pipi --no-deps "$launch_dir"/wheels/*.whl
  pipi -r "$root/requirements/launch.txt"
  generate_interfaces composition_interfaces.srv "$launch_dir/src/composition_interfaces"
  echo "bootstrap[$distro]: launch system and ros2 CLI installed from $launch_dir ($(elapsed) s)"
else
  echo "bootstrap[$distro]: no ${TT_DEPTH_ROS_SHARED:-$root/../shared}/ros/launch: launch system and ros2 CLI not installed" \
       "(the real-launch tests skip outside CI)"
fi

pip_quiet --no-deps --no-build-isolation -e "$root"
echo "$stamp_want" >"$stamp_file"
echo "bootstrap[$distro]: done in $(elapsed) s ($venv)"
