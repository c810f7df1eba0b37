"""Foundation shared by every layer: named exceptions, training samples, the formula front end
(the only module that calls patsy), nonlinear formulas (safe parsing, symbolic derivatives,
compiled residuals), the bounded least-squares kernels (Levenberg–Marquardt, multistart),
package versions and vectorisable elementary functions.

Imports nothing else from the package.
"""
