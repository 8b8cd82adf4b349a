"""Slow: egca.route_batch equals egca-batch on 500 CodeT samples, and token credit equals
AssignTokenCredit on egca-batch's spans (bench/python/equality.py does the work)."""
import os
import subprocess
import sys

from conftest import ROOT


def test_python_equals_egca_batch_on_500_codet_samples(routing):
    script = ROOT / "bench" / "python" / "equality.py"
    done = subprocess.run([sys.executable, str(script), "--samples", "500", "--workers", "2"],
                          capture_output=True, text=True, env=dict(os.environ))
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "EQUAL" in done.stdout
