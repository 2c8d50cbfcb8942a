"""Tool declaration: specs, specs from docstrings, packs, providers and the built-in file tools."""
