from ember._src.errors import *  # noqa: F401,F403
