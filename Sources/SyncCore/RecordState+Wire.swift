import Model

extension RecordState {
    /// A state from its JSON: fields `{"name": {"s": STAMP, "v": VALUE}}` and
    /// versions `{"device": counter}` (the wire's form, and the stores').
    public init(fields: JSONValue, versions: JSONValue, context: String) throws(Wire.Problem) {
        guard case .object(let fieldsObject) = fields, fieldsObject.count <= Wire.maxFields + Wire.maxSealedExtraFields else {
            throw Wire.Problem("\(context) needs \"fields\", an object of at most \(Wire.maxFields) fields")
        }
        var registers: [String: StampedValue] = [:]
        for (name, register) in fieldsObject {
            guard !name.isEmpty else { throw Wire.Problem("\(context) has a field with no name") }
            if let problem = Wire.problem(fieldName: name) { throw Wire.Problem("\(context): \(problem)") }
            let stamped = try StampedValue(json: register, context: "field \"\(name)\" of \(context)")
            if let problem = Wire.problem(value: stamped.value) { throw Wire.Problem("field \"\(name)\" of \(context): \(problem)") }
            registers[name] = stamped
        }
        guard case .object(let versionsObject) = versions else { throw Wire.Problem("\(context) needs \"versions\", an object") }
        guard versionsObject.count <= Wire.maxVersionEntries else {
            throw Wire.Problem("\(context): a version vector has more than \(Wire.maxVersionEntries) devices")
        }
        var counters: [String: UInt64] = [:]
        for (device, counter) in versionsObject {
            guard HLCTimestamp.isValidDevice(device) else { throw Wire.Problem("\(context): a version vector names an invalid device id") }
            guard let value = counter.intValue, value >= 0 else { throw Wire.Problem("\(context): version of \"\(device)\" must be a count") }
            counters[device] = UInt64(value)
        }
        self.init(fields: registers, versions: VersionVector(counters))
        // Beyond maxFields, only encryption's own fields.
        if let problem = Wire.fieldCountProblem(self) { throw Wire.Problem("\(context): \(problem)") }
    }

    /// A state from the stored JSON text of its fields and versions.
    public init(fieldsJSON: String, versionsJSON: String) throws(Wire.Problem) {
        // Read straight from the text (every record a push, a pull or a
        // merge reads); anything it declines is read through the tree, which
        // says what is wrong.
        if let scanned = Self.scanned(fieldsJSON: fieldsJSON, versionsJSON: versionsJSON) {
            self = scanned
            return
        }
        do {
            try self.init(fields: try JSONValue.parse(fieldsJSON), versions: try JSONValue.parse(versionsJSON), context: "a stored record")
        } catch let problem as Wire.Problem {
            throw problem
        } catch {
            throw Wire.Problem("a stored record is not JSON: \(error)")
        }
    }
}
