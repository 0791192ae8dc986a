"""Record MXNet 1.9.1's test accuracy on the example trainings that
tests/test_harness_examples.py runs with graphexec (examples/train_mnist_like.py and
examples/mnist_tutorial.py with 'import mxnet as mx' in place of the graphexec import).

    python tests/data/harness/make_example_reference.py /path/to/mxnet-venv/bin/python

dist_sync runs MXNet's own parameter server on localhost (a scheduler, one server and two
workers, as MXNet's tools/launch.py starts them). Writes example_accuracy.json beside this
script.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples")

#: name -> arguments of examples/train_mnist_like.py (tests/test_harness_examples.py uses them;
#: "tutorial" is examples/mnist_tutorial.py)
CASES = {
    "tutorial": [],
    "mlp": ["--network", "mlp", "--num-epoch", "4"],
    "lenet": ["--network", "lenet", "--num-epoch", "1", "--num-train", "3000"],
    "mlp_two_contexts": ["--network", "mlp", "--num-epoch", "4", "--contexts", "2",
                         "--kvstore", "local"],
    "mlp_dist_sync": ["--network", "mlp", "--num-epoch", "4", "--kvstore", "dist_sync"],
}


def _script(folder, name):
    shutil.copy(os.path.join(EXAMPLES, "mnist_like.py"), folder)
    with open(os.path.join(EXAMPLES, name)) as f:
        text = f.read().replace("import graphexec as mx\n", "import mxnet as mx\n")
    path = os.path.join(folder, "mx_" + name)
    with open(path, "w") as f:
        f.write(text)
    return path


def _accuracy(output):
    return float(re.search(r"RESULT accuracy=([0-9.]+)", output).group(1))


def run(python, script, args):
    env = dict(os.environ, MXNET_SUBGRAPH_BACKEND="NONE", OMP_NUM_THREADS="2")
    if "dist_sync" not in args:
        return _accuracy(subprocess.run([python, script] + args, env=env, check=True,
                                        capture_output=True, text=True).stdout)
    env.update(DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT="9391", DMLC_NUM_SERVER="1",
               DMLC_NUM_WORKER="2", OMP_NUM_THREADS="1")
    daemons = [subprocess.Popen([python, "-c", "import mxnet"], env=dict(env, DMLC_ROLE=role))
               for role in ("scheduler", "server")]
    workers = [subprocess.Popen([python, script] + args, env=dict(env, DMLC_ROLE="worker"),
                                stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [w.communicate()[0] for w in workers]
    for d in daemons:
        d.wait()
    return _accuracy(outputs[0])


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        scripts = {name: _script(folder, name + ".py")
                   for name in ("train_mnist_like", "mnist_tutorial")}
        results = {name: {"args": args, "mxnet_accuracy": run(
            sys.argv[1], scripts["mnist_tutorial" if name == "tutorial" else "train_mnist_like"],
            args)} for name, args in CASES.items()}
    with open(os.path.join(HERE, "example_accuracy.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))
