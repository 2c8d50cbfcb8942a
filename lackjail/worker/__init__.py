"""The only lackjail code that runs inside the jail.

It imports the language, the wire and the standard library (plus msgpack),
nothing else: the jail mounts just these files. The children's seccomp filter
arrives compiled (lackjail/pool/syscall_filter.py builds it on the host).
"""
