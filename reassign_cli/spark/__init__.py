"""generate on PySpark: split.py is what an executor does with its split (pure), engine.py drives Spark
(pyspark imported lazily). Imports planning, core and errors; never ops, render or cli."""
