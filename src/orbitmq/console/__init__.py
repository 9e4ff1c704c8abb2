"""`orbitmq console`: a small web console (aiohttp) over the admin API; see console/app.py."""
