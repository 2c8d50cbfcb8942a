"""The only lackjail code that runs inside the jail.

It imports the language, the wire and the standard library (plus msgpack and
pyseccomp), nothing else: the jail mounts just these files.
"""
