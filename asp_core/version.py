"""The one version string of the project.

It names the package release and is mixed into every on-disk cache key, so a new release never
loads a variant built by an older one.
"""

VERSION = "0.1.0"
