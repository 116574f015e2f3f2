"""Logging settings for emq's loggers (tests/test_docs_examples.py checks that dictConfig accepts them)."""

# --8<-- [start:logging]
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # job_id, job_name, queue and attempt on every record (empty outside a job)
    "filters": {"job": {"()": "emq.runtime.logs.JobContextFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(job_id)s] %(message)s"},
        "json": {"()": "emq.runtime.logs.JsonFormatter"},  # one JSON object a line
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["job"]}},
    "root": {"handlers": ["console"], "level": "INFO"},  # your jobs' own loggers too
    "loggers": {"emq": {"level": "INFO"}},  # completed jobs at INFO (EMQ_LOG_COMPLETED = False: not)
}
# --8<-- [end:logging]
