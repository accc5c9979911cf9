// fulcrum_trainer: a stand-in training program for the supervisor's tests and benchmark. It counts
// steps, touches $FULCRUM_HEARTBEAT_FILE (or writes {"step", "tokens", "loss"} into it with
// --heartbeat-json), prints "step N", writes a checkpoint directory
// (step-NNNNNNNN/ with a "step" file, a data file written over --checkpoint-ms, then a COMPLETE
// marker) when $FULCRUM_CHECKPOINT_REQUEST_FILE appears (deleting it), on SIGUSR1 or every
// --checkpoint-every-steps, resumes from $FULCRUM_RESUME_FROM, and can
// crash, hang or exit with a code on command. Plain C++ with no fulcrum code, like a user's job.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

volatile sig_atomic_t g_checkpoint = 0;
volatile sig_atomic_t g_term = 0;

struct Options {
  long steps = 100;
  long step_ms = 20;
  long checkpoint_every_steps = 0;
  long checkpoint_ms = 0;
  long crash_at_step = -1;
  long crash_times = 1000000;  // crash only while FULCRUM_RESTART_COUNT < this
  long hang_at_step = -1;
  long hang_times = 1000000;  // hang only while FULCRUM_RESTART_COUNT < this
  long exit_at_step = -1;
  int exit_code = 1;
  bool ignore_term = false;
  bool ignore_requests = false;  // never looks at the request file (a job that cannot checkpoint)
  bool heartbeat_json = false;   // write {"step", "tokens", "loss"} into the heartbeat file
  long tokens_per_step = 2048;
};

void SleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);  // a signal cuts it short, which is fine
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void Touch(const std::string& path) {
  if (path.empty()) return;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  if (fd >= 0) close(fd);
  utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
}

// The heartbeat as JSON, written whole (temporary file, then rename) so that a reader never sees
// half of it.
void WriteHeartbeatJson(const std::string& path, long step, long tokens_per_step) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << "{\"step\": " << step << ", \"tokens\": " << step * tokens_per_step
                     << ", \"loss\": " << 10.0 / static_cast<double>(step + 1) << "}\n";
  rename(tmp.c_str(), path.c_str());
}

void WriteCheckpoint(long step, const Options& o) {
  std::string dir = Env("FULCRUM_CHECKPOINT_DIR");
  if (dir.empty()) return;
  char name[64];
  std::snprintf(name, sizeof name, "/step-%08ld", step);
  std::string path = dir + name;
  mkdir(path.c_str(), 0755);
  std::ofstream(path + "/step") << step << "\n";
  std::printf("checkpoint begin %s\n", path.c_str());
  std::fflush(stdout);
  {
    std::ofstream data(path + "/data.bin", std::ios::binary);
    const long chunks = 10;
    for (long i = 0; i < chunks; ++i) {
      data << std::string(1024, static_cast<char>('a' + i % 26));
      data.flush();
      if (o.checkpoint_ms > 0) SleepMs(o.checkpoint_ms / chunks);
    }
  }
  std::ofstream(path + "/COMPLETE") << "ok\n";
  std::printf("checkpoint %s\n", path.c_str());
  std::fflush(stdout);
}

long ResumeStep() {
  std::string from = Env("FULCRUM_RESUME_FROM");
  if (from.empty()) {
    std::printf("fresh start\n");
    return 0;
  }
  long step = 0;
  std::ifstream(from + "/step") >> step;
  std::printf("resumed from %s at step %ld\n", from.c_str(), step);
  return step;
}

bool Parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](long& out) {
      if (i + 1 >= argc) return false;
      out = std::strtol(argv[++i], nullptr, 10);
      return true;
    };
    long code = 0;
    bool ok = true;
    if (a == "--steps")
      ok = next(o.steps);
    else if (a == "--step-ms")
      ok = next(o.step_ms);
    else if (a == "--checkpoint-every-steps")
      ok = next(o.checkpoint_every_steps);
    else if (a == "--checkpoint-ms")
      ok = next(o.checkpoint_ms);
    else if (a == "--crash-at-step")
      ok = next(o.crash_at_step);
    else if (a == "--crash-times")
      ok = next(o.crash_times);
    else if (a == "--hang-at-step")
      ok = next(o.hang_at_step);
    else if (a == "--hang-times")
      ok = next(o.hang_times);
    else if (a == "--exit-at-step")
      ok = next(o.exit_at_step);
    else if (a == "--exit-code") {
      ok = next(code);
      o.exit_code = static_cast<int>(code);
    } else if (a == "--ignore-term")
      o.ignore_term = true;
    else if (a == "--ignore-requests")
      o.ignore_requests = true;
    else if (a == "--heartbeat-json")
      o.heartbeat_json = true;
    else if (a == "--tokens-per-step")
      ok = next(o.tokens_per_step);
    else
      ok = false;
    if (!ok) {
      std::fprintf(stderr, "fulcrum_trainer: bad argument '%s'\n", a.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, o)) return 2;
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_checkpoint = 1; };
  sigaction(SIGUSR1, &sa, nullptr);
  sa.sa_handler = [](int) { g_term = 1; };
  sigaction(SIGTERM, &sa, nullptr);
  if (o.ignore_term) signal(SIGTERM, SIG_IGN);
  const long restart = std::strtol(Env("FULCRUM_RESTART_COUNT").c_str(), nullptr, 10);
  const std::string heartbeat = Env("FULCRUM_HEARTBEAT_FILE");
  const std::string request_file = o.ignore_requests ? "" : Env("FULCRUM_CHECKPOINT_REQUEST_FILE");
  std::printf("trainer pid %d restart %ld gpus '%s'\n", getpid(), restart,
              Env("CUDA_VISIBLE_DEVICES").c_str());
  long step = ResumeStep();
  std::fflush(stdout);
  while (step < o.steps) {
    if (g_term) {
      std::printf("terminated at step %ld\n", step);
      std::fflush(stdout);
      return 143;
    }
    // The request-file protocol: the supervisor creates the file, the job checkpoints and
    // deletes it.
    if (!request_file.empty() && access(request_file.c_str(), F_OK) == 0) {
      unlink(request_file.c_str());
      g_checkpoint = 1;
    }
    if (g_checkpoint) {
      g_checkpoint = 0;
      WriteCheckpoint(step, o);
      continue;
    }
    SleepMs(o.step_ms);
    ++step;
    std::printf("step %ld\n", step);
    std::fflush(stdout);
    if (o.heartbeat_json) {
      WriteHeartbeatJson(heartbeat, step, o.tokens_per_step);
    } else {
      Touch(heartbeat);
    }
    if (step == o.crash_at_step && restart < o.crash_times) {
      std::fprintf(stderr, "crashing at step %ld\n", step);
      std::fflush(stderr);
      abort();
    }
    if (step == o.exit_at_step) return o.exit_code;
    if (step == o.hang_at_step && restart < o.hang_times) {
      while (!g_term) SleepMs(50);
    }
    if (o.checkpoint_every_steps > 0 && step % o.checkpoint_every_steps == 0)
      WriteCheckpoint(step, o);
  }
  std::printf("done at step %ld\n", step);
  return 0;
}
