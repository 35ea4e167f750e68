"""Multi-process runs over MPI (#22): test/mpi/mpi_programs.py under
`mpirun -n 2`, `-n 4` (more processes than cores: oversubscribed) and with
two devices per process. `make test` installs MPICH and mpi4py first."""

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "..", "mpi", "mpi_programs.py")
SPMD = os.path.join(HERE, "..", "mpi", "spmd_programs.py")


def _mpi_ready():
    if shutil.which("mpirun") is None:
        return "mpirun is not installed (make test installs Debian's mpich)"
    r = subprocess.run([sys.executable, "-c", "import mpi4py.MPI"], capture_output=True)
    if r.returncode != 0:
        return "mpi4py cannot load MPI: " + r.stderr.decode()[-300:]
    return None


def _run_under_mpirun(program, procs, local, checks):
    """Runs `program` in `procs` processes of `local` devices each; every
    rank must report its `checks` passed."""
    why = _mpi_ready()
    if why:
        pytest.skip(why)
    env = dict(os.environ, EMBER_NUM_CPU_DEVICES=str(local))
    r = subprocess.run(["mpirun", "-n", str(procs), sys.executable, program], env=env,
                       capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    for rank in range(procs):
        assert f"rank {rank}/{procs}: {checks} checks passed" in out, out[-4000:]


@pytest.mark.parametrize("procs,local", [(2, 1), (4, 1), (2, 2)])
def test_mpi_programs(procs, local):
    _run_under_mpirun(PROGRAMS, procs, local, 35)


@pytest.mark.parametrize("procs", [2, 4])
def test_jit_partitioned_over_processes(procs):
    """Plain `jit` on arrays split over the processes' mesh: MLIR's
    partitioning (ember-partition) and collectives through the mpi dialect;
    results against NumPy and the replicated program."""
    _run_under_mpirun(SPMD, procs, 1, 14)


def test_initialize_outside_mpirun():
    code = ("import ember\n"
            "try:\n    ember.distributed.initialize()\n"
            "except RuntimeError as e:\n    print('refused:', e)\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert "refused: ember.distributed.initialize: this process was not started by an MPI " \
           "launcher" in r.stdout, r.stdout + r.stderr
