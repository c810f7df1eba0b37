"""Foundation shared by every layer: named exceptions, training samples, the formula front end
(the only module that calls patsy), package versions and vectorisable elementary functions.

Imports nothing else from the package.
"""
