"""Adapters that give agent frameworks a lackjail session as their code tool.

One module per framework, each importing its framework when it is imported
(so only where that framework is installed): `smolagents` (a CodeAgent
executor), `pydantic_ai` (a Tool), `langchain` (a BaseTool), `openai_agents`
(a function tool). The core never imports them. `common` holds what they share:
one session per adapter and the text a model reads back from a run.
"""
