"""The built-in system modules' name for hpcval.sitesystem (a site's
modules import that public module)."""
from hpcval.sitesystem import *  # noqa: F401,F403
from hpcval.sitesystem import __all__  # noqa: F401
