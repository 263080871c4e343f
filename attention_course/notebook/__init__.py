"""Notebook support: the session (``ac.setup``), the run profile, the ``%%keras``/``%%pytorch`` magics, glue,
widgets and the instructor export."""
