#include "supervise/lock.h"

#include <filesystem>

#include "store/sqlite.h"

namespace fulcrum::supervise {

Status ValidateJobName(const std::string& name) {
  if (name.empty() || name.size() > 100 || name == "." || name == "..") {
    return Status::InvalidInput("--name: expected 1-100 characters, found '" + name + "'");
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return Status::InvalidInput("--name: expected letters, digits, '-', '_' or '.', found '" +
                                  name + "'");
    }
  }
  return Status::Ok();
}

off_t JobLockOffset(const std::string& job_id) {
  constexpr uint64_t kBase = uint64_t{1} << 41;
  constexpr uint64_t kSpan = uint64_t{1} << 40;
  return static_cast<off_t>(kBase + (Fnv1a64(job_id) & (kSpan - 1)));
}

Result<JobLock> JobLock::Acquire(const std::string& data_dir, const std::string& job_id) {
  FULCRUM_RETURN_IF_ERROR(ValidateJobName(job_id));
  const std::filesystem::path dir(data_dir);
  FULCRUM_RETURN_IF_ERROR(store::CreateDataDir((dir / "locks").string()));
  // The database store::JobsDb::OpenInDataDir opens; SQLite takes an empty file as a new one.
  const std::string jobs_db = (dir / "jobs.db").string();
  FULCRUM_RETURN_IF_ERROR(store::CreateDataFile(jobs_db));
  FULCRUM_ASSIGN_OR_RETURN(FileLock lock,
                           FileLock::LockRecord(jobs_db, JobLockOffset(job_id),
                                                (dir / "locks" / (job_id + ".pid")).string(),
                                                "job '" + job_id + "' is already supervised by"));
  return JobLock(std::move(lock));
}

}  // namespace fulcrum::supervise
