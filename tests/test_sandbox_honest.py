"""Honest programs in the sandbox: what a language model plausibly writes for a prediction task
(numpy, scipy, scikit-learn, pandas, statsmodels, matplotlib, threads, files in the working
directory, SQLite, logging) runs under every kernel layer and both namespace backends, with the
modules a user would allow, and computes the answer a direct computation gives. What the
sandbox refuses on purpose (processes, locks) fails with a message naming it.
"""

from __future__ import annotations

import math
import platform
import shutil
import sys
from dataclasses import dataclass

import numpy as np
import pytest

import restrictiveness as rx
from restrictiveness.ai.sandbox import DEFAULT_ALLOWED_MODULES, SCIENTIFIC_MODULES

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64",
    reason="the sandbox needs Linux; its seccomp filter is x86-64's")

LIMITS = rx.SandboxLimits(wall_seconds=60, cpu_seconds=60)
DRIVER = "set_value(program.get('RESULT'))"
SCIENCE = SCIENTIFIC_MODULES | {"statsmodels", "matplotlib", "joblib", "threadpoolctl"}


@dataclass(frozen=True)
class Refused:
    """A run the sandbox refuses on purpose: its reason and words its message must hold."""

    reason: str
    words: tuple[str, ...]


@dataclass(frozen=True)
class Honest:
    name: str
    source: str
    expect: object       # the program's RESULT (numbers compared to 1e-9), or Refused
    modules: frozenset = frozenset()  # allowed beside DEFAULT_ALLOWED_MODULES
    xfail: str = ""      # why it fails today (a known gap, checked strictly)
    files: tuple = ()    # (name, bytes) pairs placed in the working directory

    @property
    def heavy(self) -> bool:
        """Seconds of imports: run under one backend (alternating), not both."""
        return any(m in self.source for m in ("sklearn", "statsmodels", "scipy.stats"))


PROGRAMS = [
    # ---- numpy ----------------------------------------------------------------------------
    Honest("numpy-blas-threads", """
import numpy as np
from threadpoolctl import threadpool_limits, threadpool_info
a = np.full((1200, 1200), 0.5)
with threadpool_limits(limits=2, user_api='blas'):   # the sandbox starts BLAS on one thread
    b = a @ a
    threads = [i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas']
RESULT = {'corner': float(b[0, 0]), 'sum': float(b.sum()), 'threads': threads}
""", {"corner": 300.0, "sum": 300.0 * 1200 ** 2, "threads": [2]}, frozenset({"threadpoolctl"})),
    Honest("numpy-threadpoolctl", """
import numpy as np
from threadpoolctl import threadpool_limits, threadpool_info
def blas_threads():
    return [lib['num_threads'] for lib in threadpool_info() if lib['user_api'] == 'blas']
before = blas_threads()
with threadpool_limits(limits=1, user_api='blas'):
    m = np.eye(600) * 3.0
    RESULT = [float(np.trace(m @ m)), blas_threads()]
RESULT.append(blas_threads() == before and len(before) > 0)
""", [600 * 9.0, [1], True], frozenset({"threadpoolctl"})),
    Honest("numpy-random", """
import numpy as np
rng = np.random.default_rng(123)
np.random.seed(7)
RESULT = {'gen': rng.standard_normal(3).tolist(), 'legacy': np.random.rand(2).tolist()}
""", {"gen": np.random.default_rng(123).standard_normal(3).tolist(),
      "legacy": np.random.RandomState(7).rand(2).tolist()}),
    Honest("numpy-linalg", """
import numpy as np
A = np.array([[4.0, 1.0], [1.0, 3.0]])
x = np.linalg.solve(A, [1.0, 2.0])
w = np.linalg.eigvalsh(A)
beta = np.linalg.lstsq(np.c_[np.ones(5), np.arange(5.0)], 1 + 2 * np.arange(5.0), rcond=None)[0]
RESULT = {'x': x.tolist(), 'eig': w.tolist(), 'beta': beta.tolist(),
          'det': float(np.linalg.det(A)), 'chol': float(np.linalg.cholesky(A)[0, 0])}
""", {"x": [1 / 11, 7 / 11], "eig": [(7 - math.sqrt(5)) / 2, (7 + math.sqrt(5)) / 2],
      "beta": [1.0, 2.0], "det": 11.0, "chol": 2.0}),
    Honest("numpy-fft", """
import numpy as np
t = np.arange(256)
spec = np.abs(np.fft.rfft(np.cos(2 * np.pi * 10 * t / 256)))
RESULT = {'peak': int(spec.argmax()), 'height': float(spec.max())}
""", {"peak": 10, "height": 128.0}),
    Honest("numpy-memmap-and-npz", """
import numpy as np
m = np.memmap('cache.dat', dtype='float64', mode='w+', shape=(1000, 100))
m[:] = np.arange(100.0)
m.flush()
del m
r = np.memmap('cache.dat', dtype='float64', mode='r', shape=(1000, 100))
np.savez_compressed('arrays.npz', a=np.asarray(r[:3]))
RESULT = {'sum': float(r.sum()), 'npz': float(np.load('arrays.npz')['a'].sum())}
""", {"sum": 1000 * 4950.0, "npz": 3 * 4950.0}),
    # ---- scipy ----------------------------------------------------------------------------
    Honest("scipy-optimize", """
import numpy as np
from scipy.optimize import minimize, curve_fit, brentq
res = minimize(lambda p: (1 - p[0])**2 + 100 * (p[1] - p[0]**2)**2, [-1.0, 2.0], method='BFGS')
x = np.linspace(0, 1, 20)
popt, _ = curve_fit(lambda x, a, b: a * np.exp(b * x), x, 2 * np.exp(0.5 * x), p0=[1, 1])
RESULT = {'rosen': np.round(res.x, 4).tolist(), 'fit': np.round(popt, 6).tolist(),
          'root': brentq(lambda z: z**2 - 2, 0, 2)}
""", {"rosen": [1.0, 1.0], "fit": [2.0, 0.5], "root": math.sqrt(2)}, SCIENCE),
    Honest("scipy-interpolate", """
import numpy as np
from scipy.interpolate import CubicSpline, interp1d, RBFInterpolator
x = np.linspace(0, 2, 9)
cs = CubicSpline(x, x**3, bc_type=((1, 0.0), (1, 12.0)))
lin = interp1d(x, 2 * x + 1)
rbf = RBFInterpolator(x[:, None], 3 * x, kernel='linear', degree=1)
RESULT = [float(cs(1.3)), float(lin(0.77)), float(rbf([[0.9]])[0])]
""", [1.3 ** 3, 2.54, 2.7], SCIENCE),
    Honest("scipy-integrate", """
import numpy as np
from scipy.integrate import quad, solve_ivp
q = quad(np.exp, 0, 1)[0]
sol = solve_ivp(lambda t, y: -y, (0, 1), [1.0], rtol=1e-10, atol=1e-12)
RESULT = [q, float(sol.y[0, -1])]
""", [math.e - 1, math.exp(-1)], SCIENCE),
    Honest("scipy-sparse", """
import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve, eigsh
n = 200
L = sparse.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format='csr')
x = spsolve(L.tocsc(), L @ np.arange(n, dtype=float))
top = eigsh(L, k=1, which='LA', return_eigenvectors=False)[0]
RESULT = [float(np.abs(x - np.arange(n)).max() < 1e-8), float(top), int(L.nnz)]
""", [1.0, 2 - 2 * math.cos(200 * math.pi / 201), 598], SCIENCE),
    Honest("scipy-stats", """
import numpy as np
from scipy import stats
r = stats.linregress(np.arange(10.0), 3 * np.arange(10.0) - 1)
RESULT = [float(stats.norm.cdf(1.959963984540054)), r.slope, r.intercept,
          float(stats.t.ppf(0.975, 10)), float(stats.spearmanr([1, 2, 3, 4], [1, 3, 2, 4])[0])]
""", [0.975, 3.0, -1.0, 2.2281388519649385, 0.8], SCIENCE),
    Honest("scipy-kdtree", """
import numpy as np
from scipy.spatial import cKDTree, KDTree, distance
g = np.array([[i, j] for i in range(30) for j in range(30)], dtype=float)
d, i = cKDTree(g).query([[3.2, 4.1], [10.6, 0.0]], k=1, workers=2)
n = KDTree(g).query_ball_point([5.0, 5.0], r=1.0)
RESULT = [i.tolist(), len(n), float(distance.cdist([[0, 0]], [[3, 4]])[0, 0])]
""", [[3 * 30 + 4, 11 * 30 + 0], 5, 5.0], SCIENCE),
    # ---- scikit-learn ---------------------------------------------------------------------
    Honest("sklearn-joblib-parallel", """
from joblib import Parallel, delayed
import math
RESULT = Parallel(n_jobs=2)(delayed(math.sqrt)(i * i) for i in range(6))
""", [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], SCIENCE),
    Honest("sklearn-cross-val-n-jobs", """
import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import cross_val_score
X = np.arange(30.0).reshape(-1, 1)
s = cross_val_score(LinearRegression(), X, 4 * X[:, 0] + 2, cv=3, n_jobs=2,
                    scoring='neg_mean_squared_error')
RESULT = [round(float(v), 9) for v in s]
""", [0.0, 0.0, 0.0], SCIENCE),
    Honest("sklearn-gp", """
import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
X = np.linspace(0, 1, 15)[:, None]
gp = GaussianProcessRegressor(RBF(0.3) + WhiteKernel(1e-6), normalize_y=True,
                              random_state=0).fit(X, np.sin(3 * X[:, 0]))
RESULT = float(abs(gp.predict([[0.5]])[0] - np.sin(1.5)) < 1e-3)
""", 1.0, SCIENCE),
    Honest("sklearn-pipeline-gridsearch", """
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler, PolynomialFeatures
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
x = np.linspace(-1, 1, 40)[:, None]
pipe = make_pipeline(PolynomialFeatures(), StandardScaler(), Ridge())
g = GridSearchCV(pipe, {'polynomialfeatures__degree': [1, 2, 3], 'ridge__alpha': [1e-8, 10.0]},
                 cv=4).fit(x, 1 + x[:, 0] ** 2)
RESULT = [g.best_params_['polynomialfeatures__degree'], g.best_params_['ridge__alpha'],
          round(float(g.predict([[0.5]])[0]), 5)]
""", [2, 1e-8, 1.25], SCIENCE),
    Honest("sklearn-knn-kmeans", """
import numpy as np
from sklearn.neighbors import KNeighborsRegressor
from sklearn.cluster import KMeans
X = np.r_[np.zeros((10, 2)), np.ones((10, 2)) * 10]
k = KNeighborsRegressor(n_neighbors=3, n_jobs=2).fit(X, np.r_[np.zeros(10), np.ones(10)])
km = KMeans(n_clusters=2, n_init=3, random_state=0).fit(X)
RESULT = [k.predict([[9.0, 9.0]]).tolist(), sorted(km.cluster_centers_[:, 0].tolist())]
""", [[1.0], [0.0, 10.0]], SCIENCE),
    # ---- pandas, statsmodels, matplotlib --------------------------------------------------
    Honest("pandas-groupby-csv-pickle", """
import pandas as pd, numpy as np
df = pd.DataFrame({'g': list('abab'), 'x': [1.0, 2.0, 3.0, 4.0]})
df.to_csv('d.csv', index=False)
back = pd.read_csv('d.csv')
back.to_pickle('d.pkl')
again = pd.read_pickle('d.pkl')
m = again.groupby('g')['x'].mean()
RESULT = {'a': m['a'], 'b': m['b'], 'rows': len(again),
          'desc': float(again['x'].describe()['std'])}
""", {"a": 2.0, "b": 3.0, "rows": 4, "desc": float(np.std([1, 2, 3, 4], ddof=1))}, SCIENCE),
    Honest("pandas-parquet-or-fallback", """
import pandas as pd
df = pd.DataFrame({'x': [1.5, 2.5]})
try:
    df.to_parquet('d.parquet')
    back = pd.read_parquet('d.parquet')
except ImportError:            # no pyarrow / fastparquet here: a feather-less fallback
    df.to_json('d.json')
    back = pd.read_json('d.json')
RESULT = float(back['x'].sum())
""", 4.0, SCIENCE),
    Honest("statsmodels-ols-glm", """
import numpy as np
import statsmodels.api as sm
x = np.arange(10.0)
X = sm.add_constant(x)
ols = sm.OLS(1 + 2 * x + np.tile([0.1, -0.1], 5), X).fit()
glm = sm.GLM(np.exp(0.5 + 0.1 * x), X, family=sm.families.Poisson()).fit()
RESULT = [round(float(v), 9) for v in ols.params] + [round(float(v), 6) for v in glm.params]
""", None, SCIENCE),
    Honest("matplotlib-agg-png", """
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(4, 3), dpi=50)
ax.plot([0, 1, 2], [0, 1, 4])
ax.set_title('fit')
fig.savefig('fit.png')
with open('fit.png', 'rb') as fh:
    head = fh.read(24)
RESULT = [head[:8].hex(), int.from_bytes(head[16:20], 'big'), int.from_bytes(head[20:24], 'big')]
""", ["89504e470d0a1a0a", 200, 150], SCIENCE),
    Honest("pandas-plot", """
import matplotlib.pyplot as plt
import pandas as pd
ax = pd.DataFrame({'y': [1.0, 3.0, 2.0]}).plot()
ax.figure.savefig('p.png')
RESULT = [open('p.png', 'rb').read(4).hex(), len(ax.lines)]
""", ["89504e47", 1], SCIENCE),
    Honest("pandas-plot-without-importing-pyplot", """
import pandas as pd
ax = pd.DataFrame({'y': [1.0, 3.0, 2.0]}).plot()
RESULT = 1
""", Refused("forbidden", ("import socket",)), SCIENCE),
    # ---- threads, files, standard library -------------------------------------------------
    Honest("threads-and-thread-pool", """
import threading
from concurrent.futures import ThreadPoolExecutor
out = [0] * 8
def work(i):
    out[i] = sum(range(i * 1000))
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
with ThreadPoolExecutor(max_workers=4) as ex:
    squares = list(ex.map(lambda v: v * v, range(10)))
lock = threading.Lock()
with lock:
    RESULT = [sum(out), sum(squares)]
""", [sum(sum(range(i * 1000)) for i in range(8)), 285], frozenset({"threading", "concurrent"})),
    Honest("process-pool", """
from concurrent.futures import ProcessPoolExecutor
with ProcessPoolExecutor(2) as ex:
    RESULT = list(ex.map(abs, [-1, -2]))
""", Refused("forbidden", ("concurrent.futures.process", "one process: use threads")),
           frozenset({"concurrent"})),
    Honest("multiprocessing-pool", """
import multiprocessing
with multiprocessing.Pool(2) as pool:
    RESULT = pool.map(abs, [-1, -2])
""", Refused("forbidden", ("multiprocessing", "one process: use threads")),
           frozenset({"multiprocessing"})),
    Honest("tempfile-pickle-json-csv", """
import tempfile, pickle, json, csv, os
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, 'm.pkl'), 'wb') as fh:
        pickle.dump({'coef': [1.0, 2.0]}, fh)
    with open(os.path.join(d, 'm.pkl'), 'rb') as fh:
        coef = pickle.load(fh)['coef']
with tempfile.NamedTemporaryFile('w+', suffix='.json') as fh:
    json.dump({'n': 3}, fh)
    fh.seek(0)
    n = json.load(fh)['n']
fd, path = tempfile.mkstemp()
os.close(fd)
with open(path, 'w', newline='') as fh:
    csv.writer(fh).writerows([[1, 2], [3, 4]])
with open(path, newline='') as fh:
    rows = [list(map(int, r)) for r in csv.reader(fh)]
os.remove(path)
RESULT = [coef, n, rows]
""", [[1.0, 2.0], 3, [[1, 2], [3, 4]]], frozenset({"pickle"})),
    Honest("sqlite-memory", """
import sqlite3
con = sqlite3.connect(':memory:')
con.execute('create table t (x real)')
con.executemany('insert into t values (?)', [(1.0,), (2.0,), (4.0,)])
RESULT = con.execute('select avg(x), count(*) from t').fetchone()
""", [7 / 3, 3], frozenset({"sqlite3"})),
    Honest("sqlite-file-nolock", """
import sqlite3
con = sqlite3.connect('file:results.db?nolock=1', uri=True)
con.execute('create table t (x real)')
con.execute('insert into t values (2.5)')
con.commit()
con.close()
RESULT = sqlite3.connect('file:results.db?nolock=1', uri=True).execute(
    'select x from t').fetchone()[0]
""", 2.5, frozenset({"sqlite3"})),
    Honest("sqlite-file-plain", """
import sqlite3
con = sqlite3.connect('results.db')
con.execute('create table t (x real)')
con.commit()
RESULT = 1
""", Refused("forbidden", ("sqlite3.connect 'results.db'", "byte-range locks",
                           "'file:results.db?nolock=1' with uri=True")), frozenset({"sqlite3"})),
    Honest("time-datetime", """
import time, datetime
t0 = time.perf_counter(); time.sleep(0.02); dt = time.perf_counter() - t0
d = datetime.date(2024, 3, 1) - datetime.timedelta(days=1)
now = datetime.datetime.now(datetime.timezone.utc)
RESULT = [dt >= 0.02, d.isoformat(), now.year >= 2024, time.time() > 1.7e9,
          time.process_time() >= 0]
""", [True, "2024-02-29", True, True, True]),
    Honest("logging-to-file", """
import logging
logging.basicConfig(filename='run.log', level=logging.INFO, format='%(levelname)s %(message)s')
log = logging.getLogger('model')
log.info('fitting %d points', 12)
log.warning('done')
logging.shutdown()
RESULT = open('run.log').read().splitlines()
""", ["INFO fitting 12 points", "WARNING done"], frozenset({"logging"})),
    Honest("signal-alarm-timeout", """
import signal, time
class Slow(Exception):
    pass
def on_alarm(signum, frame):
    raise Slow()
signal.signal(signal.SIGALRM, on_alarm)
signal.setitimer(signal.ITIMER_REAL, 0.05)
try:
    while True:
        time.sleep(0.01)
except Slow:
    RESULT = 'stopped'
signal.setitimer(signal.ITIMER_REAL, 0)
""", "stopped", frozenset({"signal"})),
    Honest("write-a-few-mb", """
import numpy as np, os
big = np.arange(1_000_000, dtype=np.float64)
np.save('big.npy', big)                 # 8 MB
with open('big.txt', 'w') as fh:
    fh.write('x' * 3_000_000)
RESULT = [os.path.getsize('big.npy'), os.path.getsize('big.txt'), float(np.load('big.npy')[-1])]
""", [8_000_128, 3_000_000, 999_999.0]),
    Honest("read-provided-csv-and-time-zones", """
import datetime, zoneinfo, time
import pandas as pd
df = pd.read_csv('data.csv')
z = datetime.datetime(2024, 7, 1, 12, tzinfo=zoneinfo.ZoneInfo('Europe/Paris'))
ts = pd.Timestamp('2024-01-01 12:00').tz_localize('America/New_York').tz_convert('UTC')
RESULT = [float(df['y'].sum()), z.utcoffset().total_seconds(), ts.hour,
          time.localtime().tm_year >= 2024]
""", [6.0, 7200.0, 17, True], SCIENCE | {"zoneinfo"},
           files=(("data.csv", b"x,y\n1,2\n3,4\n"),)),
    Honest("scipy-linprog-qhull", """
import numpy as np
from scipy.optimize import linprog
from scipy.spatial import Delaunay, ConvexHull
r = linprog([-1, -1], A_ub=[[1, 2], [3, 1]], b_ub=[4, 6], bounds=[(0, None)] * 2)
pts = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 0.5]])
RESULT = [-r.fun, len(Delaunay(pts).simplices), ConvexHull(pts).volume]
""", [2.8, 4, 1.0], SCIENCE),
    Honest("joblib-memory-cache", """
import joblib
calls = []
mem = joblib.Memory('cache', verbose=0)
@mem.cache
def double(x):
    calls.append(x)
    return x * 2
RESULT = [double(3), double(3), len(calls)]
""", [6, 6, 1], SCIENCE),
    Honest("compressed-outputs", """
import gzip, zipfile, shutil, hashlib, uuid, os
with gzip.open('a.gz', 'wt') as fh:
    fh.write('x' * 100000)
with zipfile.ZipFile('b.zip', 'w', zipfile.ZIP_DEFLATED) as z:
    z.write('a.gz')
shutil.make_archive('arch', 'zip', '.', 'a.gz')
RESULT = [len(gzip.open('a.gz', 'rt').read()), zipfile.ZipFile('b.zip').namelist(),
          os.path.exists('arch.zip'), hashlib.sha256(b'a').hexdigest()[:8],
          len(str(uuid.uuid4()))]
""", [100000, ["a.gz"], True, "ca978112", 36], frozenset({"gzip", "zipfile", "uuid"})),
    Honest("import-by-name", """
import importlib
optimize = importlib.import_module('scipy.optimize')
RESULT = round(float(optimize.minimize_scalar(lambda x: (x - 2) ** 2).x), 6)
""", 2.0, SCIENCE | {"importlib"}),
    Honest("gc-collect", """
import gc
big = [[i] for i in range(100000)]
del big
RESULT = [gc.collect() >= 0, gc.isenabled()]
""", [True, True], frozenset({"gc"})),
    Honest("multiprocessing-cpu-count", """
import multiprocessing
RESULT = multiprocessing.cpu_count()
""", Refused("forbidden", ("import multiprocessing", "use threads")),
           frozenset({"multiprocessing"})),
    Honest("numba-jit", """
import numpy as np
from numba import njit
@njit
def total(x):
    t = 0.0
    for v in x:
        t += v
    return t
RESULT = total(np.arange(10.0))
""", Refused("forbidden", ("ctypes.dlsym",)), frozenset({"numba"})),
    Honest("os-queries", """
import os, sys
RESULT = [os.cpu_count() >= 1, len(os.sched_getaffinity(0)) >= 1, os.getcwd() != '',
          [n for n in os.listdir('.') if not n.startswith('.')] == ['program.py'],
          sys.version_info >= (3, 10)]
""", [True, True, True, True, True]),
]

def _statsmodels_answer():
    # OLS of an exact line plus alternating noise, and a Poisson GLM on an exact log-linear mean
    x = np.arange(10.0)
    X = np.c_[np.ones(10), x]
    ols = np.linalg.lstsq(X, 1 + 2 * x + np.tile([0.1, -0.1], 5), rcond=None)[0]
    return [round(float(v), 9) for v in ols] + [0.5, 0.1]


def _close(got, want) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and \
            all(_close(got[k], want[k]) for k in want)
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and \
            all(_close(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, (bool, str)):
        return got == want
    return isinstance(got, (int, float)) and not isinstance(got, bool) and \
        math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


def run_honest(program: Honest) -> rx.SandboxResult:
    """Run ``program`` with the default modules plus its own, as a user would allow them."""
    return rx.run_python(program.source, driver=DRIVER, limits=LIMITS, files=dict(program.files),
                         allowed_modules=DEFAULT_ALLOWED_MODULES | program.modules)


def verdict(program: Honest, r: rx.SandboxResult) -> str | None:
    """None when the run did what it should; otherwise what went wrong."""
    want = _statsmodels_answer() if program.expect is None else program.expect
    if isinstance(want, Refused):
        if r.ok:
            return f"ran, expected a refusal ({want.reason}): {r.value!r}"
        missing = [w for w in want.words if w not in r.message]
        if r.reason != want.reason or missing:
            return f"{r.reason}: {r.message[-600:]!r} (expected {want.reason} naming {missing})"
        return None
    if not r.ok:
        return f"{r.reason}: {r.message[-600:]}"
    if not _close(r.value, want):
        return f"value {r.value!r}, expected {want!r}"
    return None


def _cases():
    # every light program under both backends, each heavy one under one of them in turn
    # (both would double the file's minute), so both backends run every library
    heavy = 0
    for p in PROGRAMS:
        backends = ["builtin", "bwrap"]
        if p.heavy:
            backends, heavy = [backends[heavy % 2]], heavy + 1
        for b in backends:
            marks = [pytest.mark.xfail(strict=True, reason=p.xfail)] if p.xfail else []
            yield pytest.param(p, b, id=f"{p.name}-{b}", marks=marks)


def use_backend(name: str, monkeypatch) -> None:
    if name == "bwrap" and not shutil.which("bwrap"):
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    monkeypatch.setenv("RX_SANDBOX_BACKEND", name)


def test_corpus_is_large_and_named_once():
    assert len(PROGRAMS) >= 30 and len({p.name for p in PROGRAMS}) == len(PROGRAMS)


@pytest.mark.parametrize(("program", "backend"), list(_cases()))
def test_honest_program_computes_its_answer(program, backend, monkeypatch):
    use_backend(backend, monkeypatch)
    r = run_honest(program)
    assert r.isolation == "full" and backend in r.layers["namespaces"]
    problem = verdict(program, r)
    assert problem is None, problem


def test_sqlite_on_a_plain_file_is_refused_only_where_locks_are():
    # under guard-only isolation no seccomp layer refuses SQLite's locks: it works as usual
    program = next(p for p in PROGRAMS if p.name == "sqlite-file-plain")
    limits = rx.SandboxLimits(wall_seconds=60, isolation="guard-only")
    with pytest.warns(rx.IsolationWarning):
        r = rx.run_python(program.source, driver=DRIVER, limits=limits,
                          allowed_modules=DEFAULT_ALLOWED_MODULES | program.modules)
    assert r.ok and r.value == 1, r.message
    full = run_honest(program)
    assert full.message == ("refused operation: sqlite3.connect 'results.db' (SQLite locks "
                            "its files with byte-range locks, which the sandbox refuses: "
                            "connect to 'file:results.db?nolock=1' with uri=True, or to "
                            "':memory:')")


AGENT_TOOL = """
import json
import numpy as np, pandas as pd
from sklearn.linear_model import LinearRegression
X, y = np.load('X_train.npy'), np.load('y_train.npy')
print(pd.DataFrame(X).describe().loc['mean'].round(3).tolist())
m = LinearRegression().fit(X, y)
json.dump({'intercept': float(m.intercept_), 'coef': m.coef_.tolist()}, open('coef.json', 'w'))
print(open('coef.json').read())
"""
AGENT_FINAL = """
import json
import numpy as np
def predict(X_train, y_train, X):
    est = json.load(open('coef.json'))
    return est['intercept'] + np.asarray(X) @ np.asarray(est['coef'])
"""


def test_an_agents_tool_runs_and_final_program_share_their_files():
    # the paper's Agent: a tool run with pandas and scikit-learn saves its estimates to a file,
    # and the returned program (default modules) reads them: predictions are the exact line
    replies = iter([f"```python\n{AGENT_TOOL}```", f"FINAL PROGRAM\n```python\n{AGENT_FINAL}```"])
    agent = rx.Agent(lambda messages: next(replies), model="scripted", limits=LIMITS,
                     tool_limits=LIMITS)
    x = np.linspace(0.0, 1.0, 30)
    sample = rx.Sample(np.c_[x, x ** 2], 2 - x + 4 * x ** 2, ("a", "b"))
    rule = agent.fit(sample, np.random.default_rng(0))
    assert [run["reason"] for run in rule.info["tool_runs"]] == [None]
    assert "coef.json" in rule.info["files"]
    X = np.array([[0.5, 0.25], [2.0, 4.0]])
    np.testing.assert_allclose(rule.predict(X), [2.5, 16.0], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["sklearn-joblib-parallel", "sklearn-knn-kmeans"])
def test_joblib_runs_in_order_under_guard_only_isolation(name):
    # guard-only keeps /dev/shm, so joblib found process support, its workers were refused
    # inside its own threads and n_jobs=2 hung until the wall clock (a timeout, not an answer)
    program = next(p for p in PROGRAMS if p.name == name)
    limits = rx.SandboxLimits(wall_seconds=20, isolation="guard-only")
    with pytest.warns(rx.IsolationWarning):
        r = rx.run_python(program.source, driver=DRIVER, limits=limits,
                          allowed_modules=DEFAULT_ALLOWED_MODULES | program.modules)
    problem = verdict(program, r)
    assert problem is None, problem


def test_an_allowed_gc_collects_but_reaches_no_object():
    # what a program would use to find the guard's own objects stays refused, by event
    r = rx.run_python("import gc\ngc.collect()\ngc.get_referrers(gc)\n", limits=LIMITS,
                      allowed_modules=DEFAULT_ALLOWED_MODULES | {"gc"})
    assert (r.reason, r.message) == ("forbidden", "refused operation: gc.get_referrers ")


def test_threadpoolctl_reaches_thread_counts_and_nothing_else():
    # the guard lets threadpoolctl open a loaded BLAS and look up its thread functions; the
    # same ctypes handle still finds no other function, and a library in the working
    # directory (which the program could have written) is not opened
    source = """
import threadpoolctl
ct = threadpoolctl.ctypes
lib = ct.CDLL([i['filepath'] for i in threadpoolctl.threadpool_info()][0])
RESULT = [lib.openblas_get_num_threads() >= 1 if hasattr(lib, 'openblas_get_num_threads')
          else True]
for name in ('syscall', 'system'):
    try:
        getattr(lib, name)
        RESULT.append(name)
    except PermissionError as exc:
        RESULT.append(str(exc))
try:
    ct.CDLL('./mine.so')
except PermissionError as exc:
    RESULT.append(str(exc))
"""
    r = rx.run_python(source, driver=DRIVER, limits=LIMITS, files={"mine.so": b"\x7fELF"},
                      allowed_modules=DEFAULT_ALLOWED_MODULES | {"threadpoolctl"})
    assert r.reason == "forbidden" and r.message.endswith("ctypes.dlsym 'syscall'"), r.message
    assert "ctypes.dlsym 'system'" in r.stderr and "ctypes.dlopen './mine.so'" in r.stderr


LINE = """
import numpy as np
def predict(X_train, y_train, X):
    A = np.c_[np.ones(len(X_train)), X_train]
    beta = np.linalg.lstsq(A, y_train, rcond=None)[0]
    return np.c_[np.ones(len(X)), X] @ beta
"""
FOREST = """
import numpy as np
from sklearn.ensemble import RandomForestRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
def fit(X_train, y_train):
    return make_pipeline(StandardScaler(), RandomForestRegressor(
        n_estimators=10, n_jobs=2, random_state=0)).fit(X_train, y_train)
def predict(model, X):
    return model.predict(X)
"""


@pytest.mark.parametrize("backend", ["builtin", "bwrap"])
def test_a_program_reads_its_inputs_and_returns_megabytes(backend, monkeypatch):
    """Through ProgramProcedure: the training sample goes in as the sandbox's input files,
    and 400,000 predictions (3.2 MB) come back exactly as a direct computation gives them."""
    use_backend(backend, monkeypatch)
    x = np.linspace(0.0, 1.0, 50)
    sample = rx.Sample(np.c_[x, x ** 2], 1 + 2 * x - 3 * x ** 2, ("a", "b"))
    rule = rx.ProgramProcedure(LINE, limits=LIMITS).fit(sample, np.random.default_rng(0))
    X = np.random.default_rng(1).uniform(size=(400_000, 2))
    pred = rule.predict(X)
    assert rule.info["reason"] is None
    np.testing.assert_allclose(pred, 1 + 2 * X[:, 0] - 3 * X[:, 1], rtol=0, atol=1e-9)


def test_a_fitted_scikit_learn_model_predicts_through_the_procedure(monkeypatch):
    # a forest of threads (n_jobs=2) in a pipeline, kept between fit and predict; a step
    # function of x is learnt exactly at points away from the step
    use_backend("bwrap" if shutil.which("bwrap") else "builtin", monkeypatch)
    x = np.arange(40.0)
    sample = rx.Sample(x[:, None], (x >= 20).astype(float), ("x",))
    proc = rx.ProgramProcedure(FOREST, "fit_predict", limits=LIMITS,
                               allowed_modules=DEFAULT_ALLOWED_MODULES | SCIENCE)
    pred = proc.fit(sample, np.random.default_rng(0)).predict(np.array([[2.0], [35.0]]))
    np.testing.assert_array_equal(pred, [0.0, 1.0])


if __name__ == "__main__":  # a table of outcomes: python tests/test_sandbox_honest.py [names]
    import os
    import time

    chosen = [p for p in PROGRAMS if len(sys.argv) < 2 or p.name in sys.argv[1:]]
    for name in ("builtin", "bwrap"):
        os.environ["RX_SANDBOX_BACKEND"] = name
        for p in chosen:
            start = time.perf_counter()
            r = run_honest(p)
            problem = verdict(p, r)
            print(f"{name:8s} {p.name:30s} {time.perf_counter() - start:5.1f}s "
                  f"{'PASS' if problem is None else 'FAIL ' + problem}", flush=True)
