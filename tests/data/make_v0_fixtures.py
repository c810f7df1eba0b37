"""Made the files beside it with restrictiveness at commit 3bff216, before the package moved
into layered subpackages; tests/test_layout.py checks that they still load (run from the
repository root)."""

import shutil

import numpy as np
import pandas as pd

import restrictiveness as rx


def main() -> None:
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    study = rx.Study(rx.MonotoneGP(F, n_eval=50),
                     {"linear": rx.OLS("y ~ x"), "quad": rx.OLS("y ~ x + I(x**2)")},
                     baseline=rx.Constant(), n=[10, 20], replications=4, seed=3)
    shutil.rmtree("tests/data/checkpoint_v0", ignore_errors=True)
    res = study.run(progress=False, checkpoint="tests/data/checkpoint_v0")
    res.to_netcdf("tests/data/results_v0.nc")
    print(repr(res.restrictiveness.values))

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(size=60), "g": np.repeat(np.arange(12), 5)})
    df["y"] = df.x**2 + 0.1 * rng.normal(size=60)
    procedures = {"linear": rx.OLS("y ~ x"), "quad": rx.OLS("y ~ x + I(x**2)")}
    comp = rx.estimate_completeness(df, procedures,
                                    baseline=rx.Constant(), benchmark="quad",
                                    design=rx.RepeatedGroupKFold(repeats=2, k=3, group="g"),
                                    to_sample=rx.TableSample(("x",), "y"), seed=1)
    comp.to_netcdf("tests/data/completeness_v0.nc")
    print(comp.kappa.to_dict(), comp.kappa_se.to_dict())


if __name__ == "__main__":  # pytest imports this file when it collects doctests
    main()
