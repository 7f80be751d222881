"""The numbers of wrk's rounds, as the benchmark scripts print them (imported
by server.sh and postgres.sh, which run from the repository's root)."""
import re
import statistics


def read(work, name, rounds):
    """Median requests/s and p99 (ms) of WORK/wrk-NAME-1..ROUNDS.txt, each
    round's requests/s, and any errors wrk reported."""
    rps, p99, errors = [], [], []
    for r in range(1, rounds + 1):
        text = open(f"{work}/wrk-{name}-{r}.txt").read()
        rps.append(float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)))
        value, unit = re.search(r"\s99%\s+([\d.]+)(us|ms|s)", text).groups()
        p99.append(float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit])
        errors += re.findall(r"(Non-2xx.*|Socket errors.*)", text)
    return statistics.median(rps), statistics.median(p99), rps, errors
