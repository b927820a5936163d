"""What the notebook tests share: a stand-in execution cache, and a cell's program without its words."""
import ast


class AnyGlue(dict):
    """Stands in for an execution cache: every glued key has the value 0.5."""

    def get(self, key, default=None):
        return {"text/plain": "0.5"}


def program(source: str) -> str:
    """What Python runs of a cell: its tree with every docstring made one (comments are not in it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            node.body[0].value.value = "docstring"
    return ast.dump(tree)
