"""Runs the fluebox Python client's unittest suite and prints one line per
test, "ok - NAME" or "not ok - NAME: WHY", the format tests/run.sh counts.

    python3 tests/run.py [-k PATTERN] [-v]

The tests start a real `fluebox serve` (FB or FLUEBOX_BIN names the binary).
"""

import faulthandler
import os
import signal
import sys
import time
import traceback
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package, without installing it


def _one_line(s):
    return " ".join(str(s).split())[:400]


class LineResult(unittest.TestResult):
    def __init__(self, stream, verbose):
        super().__init__()
        self.out = stream
        self.verbose = verbose
        self.started = {}

    tag = ""

    def _name(self, test):
        mod = test.__class__.__module__.replace("test_", "")
        return "%s%s.%s: %s" % (self.tag, mod, test.__class__.__name__, getattr(test, "_testMethodName", str(test)))

    def _emit(self, line):
        self.out.write(line + "\n")
        self.out.flush()

    def startTest(self, test):
        super().startTest(test)
        self.started[test.id()] = time.monotonic()
        signal.alarm(TEST_TIMEOUT)

    def stopTest(self, test):
        signal.alarm(0)
        super().stopTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        extra = ""
        if self.verbose:
            extra = " # %.2fs" % (time.monotonic() - self.started.get(test.id(), time.monotonic()))
        self._emit("ok - %s%s" % (self._name(test), extra))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._emit("ok - %s # skip %s" % (self._name(test), _one_line(reason)))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._emit("ok - %s # expected failure" % self._name(test))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._emit("not ok - %s: unexpected success" % self._name(test))

    def _bad(self, test, err, kind):
        etype, value, tb = err
        name = self._name(test) if isinstance(test, unittest.TestCase) else str(test)
        self._emit("not ok - %s: %s %s: %s" % (name, kind, etype.__name__, _one_line(value)))
        for line in "".join(traceback.format_exception(etype, value, tb)).splitlines()[-12:]:
            self._emit("# " + line)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._bad(test, err, "failed")

    def addError(self, test, err):
        super().addError(test, err)
        self._bad(test, err, "error")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._bad(subtest, err, "failed" if issubclass(err[0], test.failureException) else "error")


# A test that hangs (a server bug, for instance) fails after this many
# seconds instead of holding the whole run: SIGALRM raises in the main thread.
TEST_TIMEOUT = int(os.environ.get("FLUEBOX_TEST_TIMEOUT", "180"))


class TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise TestTimeout("the test took longer than %d s" % TEST_TIMEOUT)


def main(argv):
    signal.signal(signal.SIGALRM, _alarm)
    if os.environ.get("FLUEBOX_TEST_DUMP"):
        faulthandler.dump_traceback_later(int(os.environ["FLUEBOX_TEST_DUMP"]), exit=True)
    verbose = "-v" in argv
    pattern = None
    if "-k" in argv:
        pattern = argv[argv.index("-k") + 1]
    if "--tag" in argv:
        LineResult.tag = argv[argv.index("--tag") + 1] + " "
    if "--quick" in argv:
        os.environ["FLUEBOX_TEST_QUICK"] = "1"  # heavy tests skip themselves
    loader = unittest.TestLoader()
    if pattern:
        loader.testNamePatterns = ["*%s*" % pattern]
    suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    result = LineResult(sys.stdout, verbose)
    suite.run(result)
    passed = result.testsRun - len(result.failures) - len(result.errors) - len(result.unexpectedSuccesses)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    sys.stdout.write("# python client: %d passed, %d failed\n" % (passed, failed))
    sys.stdout.write("# end of suite\n")  # ran to its end (tests/tap.sh)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
