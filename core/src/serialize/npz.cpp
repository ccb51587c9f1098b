// save/load of state dicts as NumPy .npz files (tessera/serialize.h): libzip
// for the zip container, npy.h for each member's header.
#include <tessera/autograd.h>
#include <tessera/serialize.h>

#include "../checked_math.h"
#include "npy.h"

#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

namespace tessera {
namespace {

std::string zip_code_message(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string msg = zip_error_strerror(&e);
  zip_error_fini(&e);
  return msg;
}

struct ArchiveCloser {
  void operator()(zip_t* z) const { zip_discard(z); }  // only reached on error paths or after reading
};
using Archive = std::unique_ptr<zip_t, ArchiveCloser>;

struct FileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

// The most bytes member `idx` can hold: the size the archive declares, and no
// more than its compressed bytes inflate to (stored: as many; deflate: at most
// 1032 times as many). Checked before allocating, so that a small file cannot
// make load() allocate gigabytes.
uint64_t member_capacity(zip_t* z, zip_uint64_t idx, const std::string& where) {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, idx, 0, &st) != 0) throw ValueError(detail::str(where, ": cannot read: ", zip_strerror(z)));
  constexpr zip_uint64_t kNeeded = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
  if ((st.valid & kNeeded) != kNeeded) throw ValueError(detail::str(where, ": the archive does not record its sizes"));
  if (st.comp_method == ZIP_CM_STORE) return std::min(st.size, st.comp_size);
  if (st.comp_method == ZIP_CM_DEFLATE) {
    zip_uint64_t most = 0;
    return __builtin_mul_overflow(st.comp_size, zip_uint64_t{1032}, &most) ? st.size : std::min(st.size, most);
  }
  throw ValueError(detail::str(where, ": compressed with zip method ", st.comp_method,
                               "; .npz members are stored or deflated"));
}

}  // namespace

void save(const std::string& path, const StateDict& dict) {
  for (const auto& [key, t] : dict)
    TSR_CHECK(key.find('/') == std::string::npos && key.find('\0') == std::string::npos, ValueError, "save('",
              path, "'): the key '", key, "' contains '/' or a NUL, which a .npz member name cannot hold");
  if (dict.empty()) {
    // libzip writes no file for an archive without members: write the empty
    // zip (a lone end-of-central-directory record) directly.
    std::FILE* f = std::fopen(path.c_str(), "wb");
    TSR_CHECK(f != nullptr, ValueError, "save('", path, "'): cannot create the file: ", std::strerror(errno));
    const char eocd[22] = {'P', 'K', 5, 6};
    const bool ok = std::fwrite(eocd, 1, sizeof eocd, f) == sizeof eocd;
    TSR_CHECK(std::fclose(f) == 0 && ok, ValueError, "save('", path, "'): cannot write the file");
    return;
  }
  int err = 0;
  Archive za(zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err));
  if (!za) throw ValueError(detail::str("save('", path, "'): cannot create the file: ", zip_code_message(err)));

  autograd::NoGradGuard no_grad;
  for (const auto& [key, tensor] : dict) {
    Tensor t = tensor.to(Device("cpu"), npy::stored_dtype(tensor.scalar_type())).contiguous();
    const std::string header = npy::encode_header(t.scalar_type(), t.sizes());
    const size_t n = header.size() + t.nbytes();
    // libzip reads the buffer at zip_close and frees it (freep = 1).
    char* buf = static_cast<char*>(std::malloc(n));
    if (buf == nullptr) throw OutOfMemoryError(detail::str("save('", path, "'): cannot allocate ", n, " bytes"));
    std::memcpy(buf, header.data(), header.size());
    if (t.nbytes() != 0) std::memcpy(buf + header.size(), t.data_ptr(), t.nbytes());
    zip_source_t* src = zip_source_buffer(za.get(), buf, n, 1);
    if (src == nullptr) {
      std::free(buf);
      throw ValueError(detail::str("save('", path, "'): ", zip_strerror(za.get())));
    }
    const std::string member = key + ".npy";
    const zip_int64_t idx = zip_file_add(za.get(), member.c_str(), src, ZIP_FL_ENC_GUESS);
    if (idx < 0) {
      zip_source_free(src);
      throw ValueError(detail::str("save('", path, "'): cannot add member '", member, "': ", zip_strerror(za.get())));
    }
    // Stored, like numpy.savez: members can be read without inflating.
    if (zip_set_file_compression(za.get(), static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0) != 0)
      throw ValueError(detail::str("save('", path, "'): ", zip_strerror(za.get())));
  }
  // zip_close writes a temporary file and renames it over `path`.
  if (zip_close(za.get()) != 0)
    throw ValueError(detail::str("save('", path, "'): cannot write the file: ", zip_strerror(za.get())));
  za.release();  // closed (zip_close frees the archive on success)
}

StateDict load(const std::string& path) {
  std::error_code ec;
  TSR_CHECK(!std::filesystem::is_directory(path, ec), ValueError, "load('", path,
            "'): is a directory, not an .npz file");
  int err = 0;
  Archive za(zip_open(path.c_str(), ZIP_RDONLY, &err));
  if (!za) {
    if (err == ZIP_ER_NOENT) throw ValueError(detail::str("load('", path, "'): no such file"));
    if (err == ZIP_ER_NOZIP)
      throw ValueError(detail::str("load('", path, "'): not a zip archive (an .npz file is a zip of .npy files)"));
    throw ValueError(detail::str("load('", path, "'): cannot open: ", zip_code_message(err)));
  }
  StateDict out;
  const zip_int64_t count = zip_get_num_entries(za.get(), 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    const auto idx = static_cast<zip_uint64_t>(i);
    const char* raw_name = zip_get_name(za.get(), idx, ZIP_FL_ENC_GUESS);
    if (raw_name == nullptr) throw ValueError(detail::str("load('", path, "'): ", zip_strerror(za.get())));
    const std::string name = raw_name;
    const std::string where = detail::str("load('", path, "'): member '", name, "'");
    if (!name.empty() && name.back() == '/') continue;  // a directory entry
    TSR_CHECK(name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0, ValueError, where,
              " is not a .npy file (an .npz holds only <key>.npy members)");
    const uint64_t capacity = member_capacity(za.get(), idx, where);
    std::unique_ptr<zip_file_t, FileCloser> f(zip_fopen_index(za.get(), idx, 0));
    if (!f) throw ValueError(detail::str(where, ": cannot read: ", zip_strerror(za.get())));
    uint64_t consumed = 0;
    auto read = [&](void* buf, size_t n) -> size_t {
      size_t got = 0;
      while (got < n) {
        const zip_int64_t r = zip_fread(f.get(), static_cast<char*>(buf) + got, n - got);
        if (r < 0) throw ValueError(detail::str(where, ": cannot read: ", zip_file_strerror(f.get())));
        if (r == 0) break;
        got += static_cast<size_t>(r);
      }
      consumed += got;
      return got;
    };
    const npy::Header h = npy::decode_header(read, where);
    // The shape rule every new tensor follows (checked_math.h), checked before
    // allocating and reported under the member's name.
    const int64_t numel = checked::check_shape(where, h.shape, h.dtype);
    const int64_t nbytes = numel * static_cast<int64_t>(element_size(h.dtype));  // fits: checked above
    const uint64_t left = capacity > consumed ? capacity - consumed : 0;
    if (static_cast<uint64_t>(nbytes) > left)
      throw ValueError(detail::str(where, ": the data is shorter than shape ", IntArrayRef(h.shape), " of ", h.dtype,
                                   " needs (", nbytes, " bytes; the member holds ", left, ")"));
    Tensor t = empty(h.shape, TensorOptions(h.dtype).device(Device("cpu")));
    if (t.nbytes() != 0 && read(t.data_ptr(), t.nbytes()) != t.nbytes())
      throw ValueError(detail::str(where, ": the data is shorter than shape ", t.sizes(), " of ", h.dtype, " needs (",
                                   t.nbytes(), " bytes)"));
    if (h.dtype == kBool) {  // NumPy reads any nonzero byte as True; a C++ bool must hold 0 or 1
      auto* p = static_cast<unsigned char*>(t.data_ptr());
      for (size_t i = 0; i < t.nbytes(); ++i) p[i] = p[i] != 0;
    }
    out.insert(name.substr(0, name.size() - 4), std::move(t));
  }
  return out;
}

}  // namespace tessera
