"""What the DAG shows: the paper tables (:mod:`.tables`) and figures (:mod:`.plots`)."""
