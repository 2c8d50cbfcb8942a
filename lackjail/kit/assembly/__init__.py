"""Kit assembly: the toolbox, kit files (workspace and bundled), and resolving any kit form to a
Kit.
"""
